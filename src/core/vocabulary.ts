/**
 * The service's shared vocabulary: the enums (each code is its index, also
 * the output order of types), the record fields of the JSON output, the
 * default services, and IPv4 parsing. Every stage uses it; it imports
 * nothing of them.
 */
export const TYPES = ['http', 'https', 'socks4', 'socks5'] as const;
export const ANONS = ['transparent', 'anonymous', 'elite'] as const;
export const DEFAULT_SERVICES = ['smtp', 'telegram', 'avito', 'google', 'the service'];
/**
 * The fields of a record, once: the JSON output's key, in canonical order
 * (a field's code is its index; the snapshot's services follow, from code
 * SERVICE_CODE), the snapshot's key it is read from, and the longest JSON
 * value it can have, quotes included (null where the loaded store bounds it).
 * The decoder, the JSON layout and the row writers all read this table.
 */
export const FIELD_TABLE = [
  { name: 'ip', snapshotKey: 'ip', maxJsonBytes: null },
  { name: 'port', snapshotKey: 'port', maxJsonBytes: 7 },
  { name: 'ip_out', snapshotKey: 'ip_out', maxJsonBytes: null },
  { name: 'type', snapshotKey: 'type', maxJsonBytes: 8 }, // "socks5"
  { name: 'anon', snapshotKey: 'anon', maxJsonBytes: 13 }, // "transparent"
  { name: 'ping', snapshotKey: 'ping_ms', maxJsonBytes: null },
  { name: 'timecheck', snapshotKey: 'checked_at', maxJsonBytes: 21 },
  { name: 'country', snapshotKey: 'country', maxJsonBytes: 4 },
  { name: 'city', snapshotKey: 'city', maxJsonBytes: null },
  { name: 'works', snapshotKey: 'works', maxJsonBytes: 5 }, // "100"
  // Who runs the exit: written only when `fields` names them, so that every answer that does not ask stays what it was.
  { name: 'asn', snapshotKey: 'asn', maxJsonBytes: 10, onRequest: true }, // 4294967295
  { name: 'org', snapshotKey: 'org', maxJsonBytes: null, onRequest: true },
  { name: 'hosting', snapshotKey: 'hosting', maxJsonBytes: 5, onRequest: true }, // false
  { name: 'mobile', snapshotKey: 'mobile', maxJsonBytes: 5, onRequest: true },
] as const;

/** The largest AS number (32 bits); 0 is reserved, and a store's networks use it for unknown. */
export const MAX_ASN = 4294967295;

export type FieldName = (typeof FIELD_TABLE)[number]['name'];
/** Record keys of the JSON output, in canonical order; services follow them. */
export const RECORD_FIELDS: readonly FieldName[] = FIELD_TABLE.map((f) => f.name);
/** The fields an answer has only when `fields` names them (docs/api.md, Who runs each exit). */
export const ON_REQUEST_FIELDS: ReadonlySet<string> = new Set(FIELD_TABLE.filter((f) => 'onRequest' in f).map((f) => f.name));
/** The code of each field. */
export const FIELD = Object.fromEntries(FIELD_TABLE.map((f, code) => [f.name, code])) as Record<FieldName, number>;
/** Services' codes start here: the code of service i is SERVICE_CODE + i. */
export const SERVICE_CODE = FIELD_TABLE.length;

/** Dotted IPv4 in canonical form (no leading zeros, each octet 0..255) from bytes → uint32, or -1. */
export function parseIPv4Bytes(b: Uint8Array, start: number, len: number): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < start + len; i++) {
    const c = b[i];
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return -1;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

const ipScratch = new Uint8Array(15);

/** The same for text. */
export function parseIPv4(s: string): number {
  if (s.length > 15) return -1;
  for (let i = 0; i < s.length; i++) ipScratch[i] = Math.min(255, s.charCodeAt(i));
  return parseIPv4Bytes(ipScratch, 0, s.length);
}
