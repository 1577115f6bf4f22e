/**
 * The service speaks one fixed offset, UTC+02:00, with no daylight saving:
 * `timecheck`, envelope timestamps, /health times and the calendar day of the
 * daily limits all use it.
 */
export const SERVICE_OFFSET_S = 2 * 3600;

const pad2 = (n: number): string => (n < 10 ? '0' + n : String(n));

/** Civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm), valid for any day. */
export function civilFromDays(days: number): { y: number; m: number; d: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: yoe + era * 400 + (m <= 2 ? 1 : 0), m, d };
}

/** `YYYY-MM-DD HH:MM:SS` of unix seconds, in the service offset. */
export function formatTimecheck(unixS: number): string {
  const local = unixS + SERVICE_OFFSET_S;
  const days = Math.floor(local / 86400);
  const sec = local - days * 86400;
  const { y, m, d } = civilFromDays(days);
  return `${y}-${pad2(m)}-${pad2(d)} ${pad2(Math.floor(sec / 3600))}:${pad2(Math.floor(sec / 60) % 60)}:${pad2(sec % 60)}`;
}

/** ISO 8601 with the service offset, whole seconds: `2026-11-22T14:03:05+02:00`. */
export function formatIsoOffset(unixMs: number): string {
  return formatTimecheck(Math.floor(unixMs / 1000)).replace(' ', 'T') + '+02:00';
}

/** The service's calendar day number (days since 1970-01-01 in UTC+02:00). */
export function serviceDay(unixMs: number): number {
  return Math.floor((unixMs / 1000 + SERVICE_OFFSET_S) / 86400);
}

/** Milliseconds until the next 00:00 in the service offset. */
export function msUntilNextServiceMidnight(unixMs: number): number {
  const nextMidnightMs = ((serviceDay(unixMs) + 1) * 86400 - SERVICE_OFFSET_S) * 1000;
  return nextMidnightMs - unixMs;
}
