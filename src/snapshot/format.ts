import { Ajv } from 'ajv';
import { RECORD_FIELDS } from '../core/vocabulary.js';

export const SNAPSHOT_FORMAT = 'proxylist.snapshot';
export const SNAPSHOT_VERSION = 1;
export const MAX_SERVICES = 32;
/** The longest string a record may hold (a city name), in UTF-8 bytes: a longer one skips the record. */
export const MAX_STRING_BYTES = 256;

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
  /** The exit's network (docs/snapshot.md): its AS number and organisation, and whether it is a hosting or a mobile network. */
  asn?: number | null;
  org?: string | null;
  hosting?: boolean | null;
  mobile?: boolean | null;
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
  for (const given of services) {
    const lower = given.toLowerCase();
    const name = given.length > 64 ? `${given.slice(0, 64)}...` : given; // as shown in messages
    if (seen.has(lower)) return `services: "${name}" appears twice (names are case-insensitive)`;
    seen.add(lower);
    if ((RECORD_FIELDS as readonly string[]).includes(lower)) return `services: "${name}" clashes with a record field`;
    if (/^(0|[1-9]\d*)$/.test(name)) return `services: "${name}" is a number; names must not be array indices`;
  }
  return null;
}

