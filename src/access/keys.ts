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
 * that place, and so perhaps part of a key (docs/operations.md, Memory, hostile clients and secrets).
 */
function whereInText(text: string, message: string): string {
  const m = /position (\d+)/.exec(message);
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  return ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}

const orDefault = (v: number | null | undefined, d: number | null): number | null => (v === undefined ? d : v);

/** The most keys a keys file may hold (docs/operations.md, Keys). */
export const MAX_KEYS = 2_000_000;
/** The largest keys file read or downloaded: two million keys by hash take about 200 MB. */
export const KEYS_FILE_MAX_BYTES = 256 * 1024 * 1024;

/** The limits of a key, four numbers a key, null as this. */
const NO_LIMIT = -1;
const DISABLED = 1;

/**
 * A keys file as a few typed arrays, made off the event loop (keys-thread.ts)
 * and handed over without a copy: the keys' SHA-256 digests sorted, and what
 * each entry says beside them. Position p of every array is the p-th digest
 * in order.
 */
export interface KeysData {
  count: number;
  /** 32 bytes a key, ascending. */
  ids: Uint8Array;
  /** Expiry in ms since the epoch, NaN for none. */
  expires: Float64Array;
  /** perWindow, windowS, daily, subnets of each key; NO_LIMIT for null. */
  limits: Float64Array;
  flags: Uint8Array;
  /** Each key's name as UTF-8 in `names`, from offsets[p] to offsets[p + 1]; empty for none. */
  nameOffsets: Uint32Array;
  names: Uint8Array;
  /** Position of the key at each index of the file, to list them in the file's order. */
  positions: Uint32Array;
  /** Entries given as the key itself (`key`), not its hash. */
  plainKeys: number;
}

/**
 * Room for `n` items of `Kind` in shared memory: the keys thread's message
 * hands the table over without a copy, and every serving thread reads the
 * same one (docs/threads.md).
 */
function shared<T>(Kind: { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number }, n: number): T {
  return new Kind(new SharedArrayBuffer(n * Kind.BYTES_PER_ELEMENT));
}

/** Parses and validates a keys file's text; throws E_KEYS_INVALID naming the bad entry. */
export function parseKeys(text: string): KeysData {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CodedError('E_KEYS_INVALID', `keys file is not valid JSON${whereInText(text, (err as Error).message)}`);
  }
  if (!validateKeysFile(doc)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${describeError(doc)}`);
  const raws = doc.keys;
  const n = raws.length;
  if (n > MAX_KEYS) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${n} keys, more than the ${MAX_KEYS} a file may hold`);
  const hex = raws.map((raw) => (raw.sha256 !== undefined ? raw.sha256.toLowerCase() : sha256Hex(raw.key!)));
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => (hex[a] < hex[b] ? -1 : hex[a] > hex[b] ? 1 : a - b));
  // The first entry, in the file's order, that is wrong: a key seen before, or a date that is none.
  let repeat = n;
  for (let p = 1; p < n; p++) if (hex[order[p]] === hex[order[p - 1]]) repeat = Math.min(repeat, order[p]);
  const expiresAt = raws.map((raw) => (raw.expires_at === undefined ? NaN : Date.parse(raw.expires_at)));
  const badDate = raws.findIndex((raw, i) => raw.expires_at !== undefined && Number.isNaN(expiresAt[i]));
  if (repeat < n && (badDate < 0 || repeat <= badDate)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${repeat}] repeats an earlier key`);
  if (badDate >= 0) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${badDate}] expires_at is not a valid date`);

  const d: KeysData = {
    count: n,
    ids: shared(Uint8Array, n * 32),
    expires: shared(Float64Array, n),
    limits: shared(Float64Array, n * 4),
    flags: shared(Uint8Array, n),
    nameOffsets: shared(Uint32Array, n + 1),
    names: shared(Uint8Array, raws.reduce((sum, raw) => sum + (raw.name === undefined ? 0 : Buffer.byteLength(raw.name)), 0)),
    positions: shared(Uint32Array, n),
    plainKeys: raws.filter((raw) => raw.key !== undefined).length,
  };
  const names = Buffer.from(d.names.buffer, d.names.byteOffset, d.names.byteLength);
  const ids = Buffer.from(d.ids.buffer, d.ids.byteOffset, d.ids.byteLength);
  let offset = 0;
  for (let p = 0; p < n; p++) {
    const i = order[p];
    const raw = raws[i];
    d.positions[i] = p;
    ids.write(hex[i], p * 32, 'hex');
    d.expires[p] = expiresAt[i];
    d.flags[p] = raw.disabled === true ? DISABLED : 0;
    const l = raw.limits ?? {};
    const set = [orDefault(l.per_window, DEFAULT_LIMITS.perWindow), orDefault(l.window_s, DEFAULT_LIMITS.windowS), orDefault(l.daily, DEFAULT_LIMITS.daily), orDefault(l.subnets, DEFAULT_LIMITS.subnets)];
    for (let k = 0; k < 4; k++) d.limits[p * 4 + k] = set[k] ?? NO_LIMIT;
    d.nameOffsets[p] = offset;
    if (raw.name !== undefined) offset += names.write(raw.name, offset, 'utf8');
  }
  d.nameOffsets[n] = offset;
  return d;
}

/** The keys in force: lookup is by the SHA-256 of the presented key, never by comparing keys. */
export class KeyTable {
  /**
   * Presented keys already hashed to an entry of this table. Only keys of
   * the table get here, one string each, so it holds at most as many as the
   * table; a new table starts empty.
   */
  private readonly known = new Map<string, KeyEntry>();
  /** Entries made so far, by position: one object per key, made when first asked for. */
  private readonly made = new Map<number, KeyEntry>();
  private readonly ids: Buffer;
  private longest: number | null = null;

  /** `data`: what the keys thread made (access/keys-worker.ts), also handed to serving threads. */
  constructor(readonly data: KeysData) {
    this.ids = Buffer.from(data.ids.buffer, data.ids.byteOffset, data.ids.byteLength);
  }

  static empty(): KeyTable {
    return new KeyTable(parseKeys('{"keys":[]}'));
  }

  static parse(text: string): KeyTable {
    return new KeyTable(parseKeys(text));
  }

  get size(): number {
    return this.data.count;
  }

  /** Entries given as the key itself, not its hash. */
  get plainKeys(): number {
    return this.data.plainKeys;
  }

  /** The longest window of a per-window limit, in seconds (0 without one). */
  get longestWindowS(): number {
    if (this.longest === null) {
      let most = 0;
      for (let p = 0; p < this.data.count; p++) if (this.data.limits[p * 4 + 1] > most) most = this.data.limits[p * 4 + 1];
      this.longest = most;
    }
    return this.longest;
  }

  /** The entry of a key's hex SHA-256. */
  get(id: string): KeyEntry | undefined {
    const p = this.positionOf(Buffer.from(id, 'hex'));
    return p < 0 ? undefined : this.entryAt(p);
  }

  /** Every entry, in the file's order. */
  *values(): IterableIterator<KeyEntry> {
    for (let i = 0; i < this.data.count; i++) yield this.entryAt(this.data.positions[i]);
  }

  /** The entry of a presented key if it is known, enabled and not expired at `nowMs`. */
  find(presented: string, nowMs: number): KeyEntry | null {
    let entry = this.known.get(presented);
    if (!entry) {
      const p = this.positionOf(hash('sha256', presented, 'buffer') as unknown as Buffer);
      if (p < 0) return null;
      entry = this.entryAt(p);
      this.known.set(presented, entry);
    }
    if (entry.disabled) return null;
    if (entry.expiresAtMs !== null && nowMs >= entry.expiresAtMs) return null;
    return entry;
  }

  private positionOf(digest: Buffer): number {
    if (digest.length !== 32) return -1;
    let lo = 0;
    let hi = this.data.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.ids.compare(digest, 0, 32, mid * 32, mid * 32 + 32);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private entryAt(p: number): KeyEntry {
    let e = this.made.get(p);
    if (e) return e;
    const d = this.data;
    const id = this.ids.toString('hex', p * 32, p * 32 + 32);
    const name = d.nameOffsets[p + 1] > d.nameOffsets[p] ? Buffer.from(d.names.buffer, d.names.byteOffset, d.names.byteLength).toString('utf8', d.nameOffsets[p], d.nameOffsets[p + 1]) : null;
    const limit = (k: number): number | null => (d.limits[p * 4 + k] === NO_LIMIT ? null : d.limits[p * 4 + k]);
    e = {
      id,
      label: name ?? id.slice(0, 8),
      name,
      disabled: (d.flags[p] & DISABLED) !== 0,
      expiresAtMs: Number.isNaN(d.expires[p]) ? null : d.expires[p],
      limits: { perWindow: limit(0), windowS: limit(1), daily: limit(2), subnets: limit(3) },
    };
    this.made.set(p, e);
    return e;
  }
}
