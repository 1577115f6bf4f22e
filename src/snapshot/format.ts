import { Ajv } from 'ajv';

/** The vocabulary of the snapshot, with each enum's code = its index (also the output order of types). */
export const TYPES = ['http', 'https', 'socks4', 'socks5'] as const;
export const ANONS = ['transparent', 'anonymous', 'elite'] as const;
export const DEFAULT_SERVICES = ['smtp', 'telegram', 'avito', 'google', 'the service'];
export const SNAPSHOT_FORMAT = 'proxylist.snapshot';
export const SNAPSHOT_VERSION = 1;
export const MAX_SERVICES = 32;

/** Record keys of the JSON output, in canonical order; services follow them. */
export const RECORD_FIELDS = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works'] as const;

/** A record as the checker writes it (after decoding, before validation). */
export interface SnapshotRecord {
  ip: string;
  port: number;
  ip_out?: string | null;
  type: string;
  anon: string;
  ping_ms: number;
  checked_at: number;
  country: string;
  city?: { ru?: string; en?: string } | null;
  works: number;
  services?: string[] | null;
}

export interface SnapshotFile {
  format: string;
  version: number;
  generated_at: number;
  services?: string[];
  proxies: unknown[];
}

const ajv = new Ajv({ allErrors: false, strict: true });

/** The top level only: records are checked one by one, so one bad record cannot reject the file. */
export const validateTopLevel = ajv.compile<SnapshotFile>({
  type: 'object',
  required: ['format', 'version', 'generated_at', 'proxies'],
  properties: {
    format: { const: SNAPSHOT_FORMAT },
    version: { const: SNAPSHOT_VERSION },
    generated_at: { type: 'integer', minimum: 0 },
    services: {
      type: 'array',
      maxItems: MAX_SERVICES,
      uniqueItems: true,
      items: { type: 'string', minLength: 1 },
    },
    proxies: { type: 'array' },
  },
});

export function describeTopLevelError(): string {
  const e = validateTopLevel.errors?.[0];
  if (!e) return 'invalid snapshot';
  const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'top level';
  const allowed = e.params && 'allowedValue' in e.params ? ` (${JSON.stringify(e.params.allowedValue)})` : '';
  return `${where}: ${e.message}${allowed}`;
}

/**
 * Service names become JSON keys and `service`/`fields` values, which match
 * case-insensitively. So beyond the schema: unique ignoring case, no clash with
 * a record key, and not an array index (JavaScript would move such keys first
 * in an object, breaking the canonical key order).
 */
export function serviceNamesProblem(services: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const name of services) {
    const lower = name.toLowerCase();
    if (seen.has(lower)) return `services: "${name}" appears twice (names are case-insensitive)`;
    seen.add(lower);
    if ((RECORD_FIELDS as readonly string[]).includes(lower)) return `services: "${name}" clashes with a record field`;
    if (/^(0|[1-9]\d*)$/.test(name)) return `services: "${name}" is a number; names must not be array indices`;
  }
  return null;
}

/** Dotted IPv4 in canonical form (no leading zeros, each octet 0..255) → uint32, or -1. */
export function parseIPv4(s: string): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
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

const isInt = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

const isAbsent = (v: unknown): boolean => v === undefined || v === null;

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/**
 * Checks one record against API.md section 2. Returns null when valid, or the
 * reason it is skipped. `serviceIndex` maps the top-level service names.
 */
export function recordProblem(r: unknown, serviceIndex: ReadonlyMap<string, number>): string | null {
  if (!isMap(r)) return 'record is not a map';
  if (typeof r.ip !== 'string' || parseIPv4(r.ip) < 0) return 'ip is not a dotted IPv4 address';
  if (!isInt(r.port, 1, 65535)) return 'port is not an integer in 1..65535';
  if (!isAbsent(r.ip_out) && (typeof r.ip_out !== 'string' || parseIPv4(r.ip_out) < 0)) return 'ip_out is not a dotted IPv4 address';
  if (typeof r.type !== 'string' || !(TYPES as readonly string[]).includes(r.type)) return 'type is not one of http, https, socks4, socks5';
  if (typeof r.anon !== 'string' || !(ANONS as readonly string[]).includes(r.anon)) return 'anon is not one of transparent, anonymous, elite';
  if (typeof r.ping_ms !== 'number' || !Number.isFinite(r.ping_ms) || r.ping_ms < 0) return 'ping_ms is not a finite number >= 0';
  if (!isInt(r.checked_at, 0, 0xffffffff)) return 'checked_at is not an integer unix time';
  if (typeof r.country !== 'string' || !/^[A-Za-z]{2}$/.test(r.country)) return 'country is not two letters';
  if (!isAbsent(r.city)) {
    if (!isMap(r.city)) return 'city is not a map';
    if (!isAbsent(r.city.ru) && typeof r.city.ru !== 'string') return 'city.ru is not a string';
    if (!isAbsent(r.city.en) && typeof r.city.en !== 'string') return 'city.en is not a string';
  }
  if (!isInt(r.works, 0, 100)) return 'works is not an integer in 0..100';
  if (!isAbsent(r.services)) {
    if (!Array.isArray(r.services)) return 'services is not an array';
    for (const s of r.services) {
      if (typeof s !== 'string' || !serviceIndex.has(s)) return `services names an unknown service ${JSON.stringify(String(s)).slice(0, 70)}`;
    }
  }
  return null;
}
