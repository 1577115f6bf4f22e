import { hash } from 'node:crypto';
import { Ajv } from 'ajv';
import { CodedError } from '../core/errors.js';

/** A limit of null means unlimited. */
export interface Limits {
  perWindow: number | null;
  windowS: number | null;
  daily: number | null;
  subnets: number | null;
}

/** The seed's limits: 2 requests per 5 s, 34,560 a day, 10 /16 subnets a day. */
export const DEFAULT_LIMITS: Limits = { perWindow: 2, windowS: 5, daily: 34560, subnets: 10 };

export interface KeyEntry {
  /** Hex SHA-256 of the key: its identity in memory, state and logs (first 8). */
  id: string;
  /** What logs call the key: its name, or the first 8 hex of its hash. */
  label: string;
  name: string | null;
  disabled: boolean;
  expiresAtMs: number | null;
  limits: Limits;
}

/** One-shot hashing: a third of the cost of createHash().update().digest() per request. */
export const sha256Hex = (s: string): string => hash('sha256', s, 'hex');

const limit = { type: ['integer', 'null'], minimum: 1 };
const ajv = new Ajv({ allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true });
const validateKeysFile = ajv.compile<{ keys: RawEntry[] }>({
  type: 'object',
  required: ['keys'],
  additionalProperties: false,
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          key: { type: 'string', minLength: 1 },
          sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
          name: { type: 'string', minLength: 1 },
          disabled: { type: 'boolean' },
          expires_at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2})$' },
          limits: {
            type: 'object',
            additionalProperties: false,
            properties: { per_window: limit, window_s: limit, daily: limit, subnets: limit },
          },
        },
        oneOf: [{ required: ['key'] }, { required: ['sha256'] }],
      },
    },
  },
});

interface RawEntry {
  key?: string;
  sha256?: string;
  name?: string;
  disabled?: boolean;
  expires_at?: string;
  limits?: { per_window?: number | null; window_s?: number | null; daily?: number | null; subnets?: number | null };
}

function describeError(doc: unknown): string {
  // A missing key/sha256 shows first as a branch's `required`; the oneOf says it better.
  const errors = validateKeysFile.errors ?? [];
  const e = errors.find((x) => x.keyword === 'oneOf') ?? errors[0];
  if (!e) return 'invalid keys file';
  const parts = e.instancePath.split('/').slice(1);
  if (parts[0] === 'keys' && parts.length >= 2) {
    const index = Number(parts[1]);
    const entry = (doc as { keys: RawEntry[] }).keys[index];
    const who = entry?.name ? ` (name "${entry.name}")` : '';
    const field = parts.slice(2).join('.');
    const message = e.keyword === 'oneOf' ? 'must have exactly one of "key" and "sha256"' : e.keyword === 'additionalProperties' ? `has an unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"` : e.message;
    return `keys[${index}]${who}${field ? ' ' + field : ''} ${message}`;
  }
  return `${e.instancePath || 'top level'} ${e.keyword === 'additionalProperties' ? `has an unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"` : e.message}`;
}

/**
 * Where JSON.parse stopped, as a line and column, from the position its
 * message gives: never the message itself, which quotes the text around
 * that place, and so perhaps part of a key (README, Memory, hostile clients and secrets).
 */
function whereInText(text: string, message: string): string {
  const m = /position (\d+)/.exec(message);
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  return ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}

const orDefault = (v: number | null | undefined, d: number | null): number | null => (v === undefined ? d : v);

/** The keys in force: lookup is by the SHA-256 of the presented key, never by comparing keys. */
export class KeyTable {
  /**
   * Presented keys already hashed to an entry of this table. Only keys of
   * the table get here, one string each, so it holds at most as many as the
   * table; a new table starts empty.
   */
  private readonly known = new Map<string, KeyEntry>();

  /** `plainKeys`: entries given as the key itself (`key`), not its hash. */
  constructor(readonly entries: ReadonlyMap<string, KeyEntry>, readonly plainKeys = 0) {}

  static empty(): KeyTable {
    return new KeyTable(new Map());
  }

  /** Parses and validates a keys file's text; throws E_KEYS_INVALID naming the bad entry. */
  static parse(text: string): KeyTable {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new CodedError('E_KEYS_INVALID', `keys file is not valid JSON${whereInText(text, (err as Error).message)}`);
    }
    if (!validateKeysFile(doc)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${describeError(doc)}`);
    const entries = new Map<string, KeyEntry>();
    doc.keys.forEach((raw, index) => {
      const id = raw.sha256 !== undefined ? raw.sha256.toLowerCase() : sha256Hex(raw.key!);
      if (entries.has(id)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${index}] repeats an earlier key`);
      let expiresAtMs: number | null = null;
      if (raw.expires_at !== undefined) {
        expiresAtMs = Date.parse(raw.expires_at);
        if (Number.isNaN(expiresAtMs)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${index}] expires_at is not a valid date`);
      }
      const l = raw.limits ?? {};
      entries.set(id, {
        id,
        label: raw.name ?? id.slice(0, 8),
        name: raw.name ?? null,
        disabled: raw.disabled === true,
        expiresAtMs,
        limits: {
          perWindow: orDefault(l.per_window, DEFAULT_LIMITS.perWindow),
          windowS: orDefault(l.window_s, DEFAULT_LIMITS.windowS),
          daily: orDefault(l.daily, DEFAULT_LIMITS.daily),
          subnets: orDefault(l.subnets, DEFAULT_LIMITS.subnets),
        },
      });
    });
    return new KeyTable(entries, doc.keys.filter((raw) => raw.key !== undefined).length);
  }

  /** The entry of a presented key if it is known, enabled and not expired at `nowMs`. */
  find(presented: string, nowMs: number): KeyEntry | null {
    let entry = this.known.get(presented);
    if (!entry) {
      entry = this.entries.get(sha256Hex(presented));
      if (!entry) return null;
      this.known.set(presented, entry);
    }
    if (entry.disabled) return null;
    if (entry.expiresAtMs !== null && nowMs >= entry.expiresAtMs) return null;
    return entry;
  }
}
