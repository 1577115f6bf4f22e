import { hash } from 'node:crypto';
import { Ajv } from 'ajv';
import { CodedError } from '../core/errors.js';
import { NO_SLICES, type Slices } from '../core/slices.js';
import { HINT, KnownKeys } from './known-keys.js';

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
  readonly id: string;
  /** What logs call the key: its name, or the first 8 hex of its hash. */
  readonly label: string;
  readonly name: string | null;
  readonly disabled: boolean;
  readonly expiresAtMs: number | null;
  readonly limits: Limits;
  /** The SHA-256 as 8 words, at `digestAt` of `digest`: how the limiter finds the key's usage without a string. */
  readonly digest: Int32Array;
  readonly digestAt: number;
  /** Where the limiter may keep a hint of where the key's usage is (known-keys.ts): two words at `hintAt` of `hints`; none for an entry found otherwise. */
  readonly hints?: Int32Array | null;
  readonly hintAt?: number;
}

/** The 8 words of a hex SHA-256, for an entry made outside a table. */
export function digestWords(id: string): Int32Array {
  const bytes = Buffer.from(id, 'hex');
  return new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + 32));
}

/** One-shot hashing: a third of the cost of createHash().update().digest() per request. */
export const sha256Hex = (s: string): string => hash('sha256', s, 'hex');

const limit = { type: ['integer', 'null'], minimum: 1 };
const ajv = new Ajv({ allErrors: false, strict: true, strictRequired: false, allowUnionTypes: true });
const entrySchema = {
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
};
const validateKeysFile = ajv.compile<{ keys: RawEntry[] }>({
  type: 'object',
  required: ['keys'],
  additionalProperties: false,
  properties: { keys: { type: 'array', items: entrySchema } },
});
/** One entry of the keys array, as the file's schema checks it. */
export const validKeyEntry = ajv.compile<RawEntry>(entrySchema);

export interface RawEntry {
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
  /** The first 4 bytes of each digest, big-endian: the binary search compares numbers, and bytes only where these are equal. */
  prefixes: Uint32Array;
  /** Expiry in ms since the epoch, NaN for none. */
  expires: Float64Array;
  /** Until when each key may be used, in ms: its expiry, Infinity for none, -Infinity when disabled (one read per request). */
  usableUntil: Float64Array;
  /** Every key has the limits of position 0 (the common case: the limits are not read per request). */
  sameLimits: boolean;
  /**
   * The class of each key's limits: keys with the same four numbers share
   * one, and a file has few. A request reads two bytes of a small array for
   * its key, where four numbers a key spread over far more memory than the
   * processor's caches hold for a crowd of keys.
   */
  limitClass: Uint16Array | Uint32Array;
  /** perWindow, windowS, daily, subnets of each class; NO_LIMIT for null. */
  classLimits: Float64Array;
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
  if (raws.length > MAX_KEYS) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${raws.length} keys, more than the ${MAX_KEYS} a file may hold`);
  const builder = new KeysBuilder(NO_SLICES, raws.length);
  for (const raw of raws) builder.add(raw);
  return builder.finish();
}

/** Room for `n` items of an array like `a`, its first `used` copied. */
function grown<T extends Uint8Array | Uint32Array | Float64Array>(a: T, used: number, n: number): T {
  if (n <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(n, a.length * 2));
  b.set(a.subarray(0, used));
  return b;
}

/**
 * A keys file's entries, added one at a time in the file's order (each
 * checked by the schema), made into KeysData: what an entry says is kept in
 * typed arrays as it is added, never as an object per key, and the sort and
 * the fill pause between items (`slices`) when a thread reads a large file.
 */
export class KeysBuilder {
  private n = 0;
  private digests: Uint8Array;
  /** The digests' bytes as a Buffer, to write hex into. */
  private digestBytes: Buffer;
  private expires: Float64Array;
  private limits: Float64Array;
  private flags: Uint8Array;
  /** Where each entry's name ends in `names`. */
  private nameEnds: Uint32Array;
  private names = new Uint8Array(1024);
  private nameBytes = 0;
  private plain = 0;
  /** The first entry whose expires_at is no date, or -1. */
  private badDate = -1;

  /** `capacity`: the entries expected, so that the arrays are made once. */
  constructor(private readonly slices: Slices = NO_SLICES, capacity = 64) {
    const n = Math.max(1, capacity);
    this.digests = new Uint8Array(32 * n);
    this.digestBytes = Buffer.from(this.digests.buffer);
    this.expires = new Float64Array(n);
    this.limits = new Float64Array(4 * n);
    this.flags = new Uint8Array(n);
    this.nameEnds = new Uint32Array(n);
  }

  get count(): number {
    return this.n;
  }

  add(raw: RawEntry): void {
    const i = this.n++;
    const room = i + 1;
    if (room > this.flags.length) {
      this.digests = grown(this.digests, i * 32, room * 32);
      this.digestBytes = Buffer.from(this.digests.buffer);
      this.expires = grown(this.expires, i, room);
      this.limits = grown(this.limits, i * 4, room * 4);
      this.flags = grown(this.flags, i, room);
      this.nameEnds = grown(this.nameEnds, i, room);
    }
    if (raw.sha256 !== undefined) this.digestBytes.write(raw.sha256, i * 32, 'hex');
    else {
      // As a latin1 string, one char a byte: a Buffer from hash() costs a new backing store for every key.
      this.digestBytes.write(hash('sha256', raw.key!, 'binary'), i * 32, 'latin1');
      this.plain++;
    }
    const at = raw.expires_at === undefined ? NaN : Date.parse(raw.expires_at);
    if (raw.expires_at !== undefined && Number.isNaN(at) && this.badDate < 0) this.badDate = i;
    this.expires[i] = at;
    this.flags[i] = raw.disabled === true ? DISABLED : 0;
    const l = raw.limits ?? {};
    this.limits[i * 4] = orDefault(l.per_window, DEFAULT_LIMITS.perWindow) ?? NO_LIMIT;
    this.limits[i * 4 + 1] = orDefault(l.window_s, DEFAULT_LIMITS.windowS) ?? NO_LIMIT;
    this.limits[i * 4 + 2] = orDefault(l.daily, DEFAULT_LIMITS.daily) ?? NO_LIMIT;
    this.limits[i * 4 + 3] = orDefault(l.subnets, DEFAULT_LIMITS.subnets) ?? NO_LIMIT;
    if (raw.name !== undefined) {
      const bytes = Buffer.byteLength(raw.name);
      this.names = grown(this.names, this.nameBytes, this.nameBytes + bytes);
      this.nameBytes += Buffer.from(this.names.buffer).write(raw.name, this.nameBytes, 'utf8');
    }
    this.nameEnds[i] = this.nameBytes;
  }

  /** The keys in the digests' order; throws for the first entry, in the file's order, that repeats a key or has no date. */
  finish(): KeysData {
    const n = this.n;
    const classes = this.limitClasses();
    const order = this.sorted();
    let repeat = n;
    for (let p = 1; p < n; p++) {
      this.slices.tick();
      if (compareDigests(this.digests, order[p], order[p - 1]) === 0) repeat = Math.min(repeat, order[p]);
    }
    const badDate = this.badDate;
    if (repeat < n && (badDate < 0 || repeat <= badDate)) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${repeat}] repeats an earlier key`);
    if (badDate >= 0) throw new CodedError('E_KEYS_INVALID', `keys file rejected: keys[${badDate}] expires_at is not a valid date`);

    const d: KeysData = {
      count: n,
      ids: shared(Uint8Array, n * 32),
      prefixes: shared(Uint32Array, n),
      expires: shared(Float64Array, n),
      usableUntil: shared(Float64Array, n),
      sameLimits: classes.count <= 1,
      limitClass: classes.count <= 0x10000 ? shared(Uint16Array, n) : shared(Uint32Array, n),
      classLimits: shared(Float64Array, classes.count * 4),
      flags: shared(Uint8Array, n),
      nameOffsets: shared(Uint32Array, n + 1),
      names: shared(Uint8Array, this.nameBytes),
      positions: shared(Uint32Array, n),
      plainKeys: this.plain,
    };
    // Locals: the loop runs once per key.
    const { ids, prefixes, expires, usableUntil, limitClass, flags, nameOffsets, names, positions } = d;
    d.classLimits.set(classes.limits);
    const from32 = new Int32Array(this.digests.buffer, 0, n * 8);
    const to32 = new Int32Array(ids.buffer, 0, n * 8);
    const view = new DataView(this.digests.buffer);
    const ends = this.nameEnds;
    let offset = 0;
    for (let p = 0; p < n; p++) {
      this.slices.tick();
      const i = order[p];
      positions[i] = p;
      for (let w = 0; w < 8; w++) to32[p * 8 + w] = from32[i * 8 + w];
      prefixes[p] = view.getUint32(i * 32);
      const at = this.expires[i];
      expires[p] = at;
      flags[p] = this.flags[i];
      usableUntil[p] = this.flags[i] === DISABLED ? -Infinity : Number.isNaN(at) ? Infinity : at;
      limitClass[p] = classes.of[i];
      nameOffsets[p] = offset;
      const start = i === 0 ? 0 : ends[i - 1];
      for (let b = start; b < ends[i]; b++) names[offset++] = this.names[b];
    }
    d.nameOffsets[n] = offset;
    return d;
  }

  /** The class of each entry's limits, in the file's order, and the four numbers of each class. */
  private limitClasses(): { of: Uint32Array; count: number; limits: number[] } {
    const n = this.n;
    const of = new Uint32Array(n);
    const limits: number[] = [];
    const byValue = new Map<string, number>();
    const l = this.limits;
    let last = -1;
    for (let i = 0; i < n; i++) {
      this.slices.tick();
      // Most entries have the limits of the one before: a Map lookup only where they differ.
      if (last >= 0 && l[i * 4] === limits[last * 4] && l[i * 4 + 1] === limits[last * 4 + 1] && l[i * 4 + 2] === limits[last * 4 + 2] && l[i * 4 + 3] === limits[last * 4 + 3]) {
        of[i] = last;
        continue;
      }
      const k = `${l[i * 4]},${l[i * 4 + 1]},${l[i * 4 + 2]},${l[i * 4 + 3]}`;
      let c = byValue.get(k);
      if (c === undefined) {
        byValue.set(k, (c = limits.length / 4));
        limits.push(l[i * 4], l[i * 4 + 1], l[i * 4 + 2], l[i * 4 + 3]);
      }
      of[i] = last = c;
    }
    return { of, count: limits.length / 4, limits };
  }

  /**
   * Entries in the order of their digests, those with the same digest in the
   * file's order: counted into buckets by the first two bytes (stable), then
   * each bucket, a handful of entries, sorted by the rest.
   */
  private sorted(): Uint32Array {
    const n = this.n;
    const digests = this.digests;
    const starts = new Uint32Array(65537);
    for (let i = 0; i < n; i++) {
      this.slices.tick();
      starts[((digests[i * 32] << 8) | digests[i * 32 + 1]) + 1]++;
    }
    for (let b = 1; b <= 65536; b++) starts[b] += starts[b - 1];
    const order = new Uint32Array(n);
    const next = starts.slice(0, 65536);
    for (let i = 0; i < n; i++) {
      this.slices.tick();
      order[next[(digests[i * 32] << 8) | digests[i * 32 + 1]]++] = i;
    }
    for (let b = 0; b < 65536; b++) {
      this.slices.tick();
      const from = starts[b];
      const to = starts[b + 1];
      if (to - from < 2) continue;
      if (to - from > 64) {
        // Digests given as such by an operator need not spread: a general sort, stable.
        const bucket = Array.from(order.subarray(from, to)).sort((x, y) => compareDigests(digests, x, y) || x - y);
        order.set(bucket, from);
        continue;
      }
      for (let j = from + 1; j < to; j++) {
        const item = order[j];
        let k = j;
        for (; k > from && compareDigests(digests, order[k - 1], item) > 0; k--) order[k] = order[k - 1];
        order[k] = item;
      }
    }
    return order;
  }
}

/** The order of entries `a` and `b` by their digests' bytes. */
function compareDigests(digests: Uint8Array, a: number, b: number): number {
  for (let k = 0; k < 32; k++) {
    const d = digests[a * 32 + k] - digests[b * 32 + k];
    if (d !== 0) return d;
  }
  return 0;
}

/** Limits objects by their four numbers: keys with the same limits share one. */
const limitsByValue = new Map<string, Limits>();
function sharedLimits(perWindow: number | null, windowS: number | null, daily: number | null, subnets: number | null): Limits {
  const k = `${perWindow},${windowS},${daily},${subnets}`;
  let l = limitsByValue.get(k);
  if (l === undefined) limitsByValue.set(k, (l = Object.freeze({ perWindow, windowS, daily, subnets })));
  return l;
}

/** An entry of a table: what the table's arrays say at one position, its strings made only when read. */
class TableEntry implements KeyEntry {
  private idText: string | null = null;
  private nameText: string | null | undefined = undefined;

  constructor(
    private readonly table: KeyTable,
    readonly position: number,
    readonly limits: Limits,
    readonly digest: Int32Array,
    readonly hints: Int32Array | null,
    readonly hintAt: number,
  ) {}

  get disabled(): boolean {
    return (this.table.data.flags[this.position] & DISABLED) !== 0;
  }

  get expiresAtMs(): number | null {
    const at = this.table.data.expires[this.position];
    return Number.isNaN(at) ? null : at;
  }

  get digestAt(): number {
    return this.position * 8;
  }

  get id(): string {
    return (this.idText ??= this.table.hexAt(this.position));
  }

  get name(): string | null {
    if (this.nameText === undefined) this.nameText = this.table.nameAt(this.position);
    return this.nameText;
  }

  get label(): string {
    return this.name ?? this.id.slice(0, 8);
  }
}

/**
 * The keys in force: lookup is by the SHA-256 of the presented key, never
 * by comparing keys. What a key seen before costs is its string and its
 * position (docs/operations.md, Memory): no object per key.
 */
export class KeyTable {
  /** Presented keys already hashed to a position of this table; a new table starts with none. */
  private readonly known: KnownKeys;
  private readonly ids: Buffer;
  /** The digests as 32-bit words, 8 a key. */
  private readonly words: Int32Array;
  private longest: number | null = null;
  /** The limits of each class (KeysData.limitClass) asked for so far. */
  private readonly classes: Limits[] = [];
  private lastEntry: TableEntry | null = null;

  /** `data`: what the keys thread made (access/keys-worker.ts), also handed to serving threads. */
  constructor(readonly data: KeysData) {
    this.ids = Buffer.from(data.ids.buffer, data.ids.byteOffset, data.ids.byteLength);
    this.words = new Int32Array(data.ids.buffer, data.ids.byteOffset, data.count * 8);
    this.known = new KnownKeys(data.count);
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
      const l = this.data.classLimits;
      for (let c = 0; c < l.length; c += 4) if (l[c + 1] > most) most = l[c + 1];
      this.longest = most;
    }
    return this.longest;
  }

  /** The entry of a key's hex SHA-256. */
  get(id: string): KeyEntry | undefined {
    const p = /^[0-9a-fA-F]{64}$/.test(id) ? this.positionOf(Buffer.from(id, 'hex').toString('latin1')) : -1;
    return p < 0 ? undefined : this.entryAt(p);
  }

  /** Every entry, in the file's order. */
  *values(): IterableIterator<KeyEntry> {
    for (let i = 0; i < this.data.count; i++) yield this.entryAt(this.data.positions[i]);
  }

  /** The entry of a presented key if it is known, enabled and not expired at `nowMs`. */
  find(presented: string, nowMs: number): KeyEntry | null {
    const known = this.known;
    let slot = known.slotOf(presented);
    if (slot < 0) {
      const p = this.positionOf(hash('sha256', presented, 'binary'));
      if (p < 0) return null;
      slot = known.set(presented, p, this.data.usableUntil[p]);
      // Not remembered (a key too long, or with a character beyond Latin-1): found by its hash each time.
      if (slot < 0) return nowMs >= this.data.usableUntil[p] ? null : this.entryAt(p);
    }
    if (nowMs >= known.usableUntilAt(slot)) return null;
    return this.entryAt(known.positionAt(slot), slot);
  }

  /** The hex SHA-256 at position `p`. */
  hexAt(p: number): string {
    return this.ids.toString('hex', p * 32, p * 32 + 32);
  }

  /** The name at position `p`, or null. */
  nameAt(p: number): string | null {
    const d = this.data;
    return d.nameOffsets[p + 1] > d.nameOffsets[p] ? Buffer.from(d.names.buffer, d.names.byteOffset, d.names.byteLength).toString('utf8', d.nameOffsets[p], d.nameOffsets[p + 1]) : null;
  }

  /**
   * The position of the digest given as 32 latin1 chars (a char a byte),
   * or -1. Digests are uniform: the search starts where the prefix's share
   * of 2^32 falls among the keys and widens by doubling steps, so that it
   * reads a few neighbouring words of `prefixes` where a bisection of the
   * whole array reads one far apart at each step.
   */
  private positionOf(digest: string): number {
    if (digest.length !== 32) return -1;
    const prefixes = this.data.prefixes;
    const count = this.data.count;
    const first = ((digest.charCodeAt(0) << 24) | (digest.charCodeAt(1) << 16) | (digest.charCodeAt(2) << 8) | digest.charCodeAt(3)) >>> 0;
    // lo and hi bound the first position whose prefix is not below the digest's: prefixes[lo - 1] < first <= prefixes[hi].
    let lo = 0;
    let hi = count;
    const guess = Math.min(count - 1, Math.floor((first / 0x1_0000_0000) * count));
    if (guess >= 0) {
      let step = 1;
      if (prefixes[guess] < first) {
        lo = guess + 1;
        while (lo + step < count && prefixes[lo + step] < first) {
          lo += step + 1;
          step *= 2;
        }
        hi = Math.min(count, lo + step);
      } else {
        hi = guess;
        while (hi - step >= 0 && prefixes[hi - step] >= first) {
          hi -= step;
          step *= 2;
        }
        lo = Math.max(0, hi - step);
      }
    }
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (prefixes[mid] < first) lo = mid + 1;
      else hi = mid;
    }
    const words = this.words;
    for (let p = lo; p < count && prefixes[p] === first; p++) {
      let same = true;
      for (let i = 1; i < 8 && same; i++) {
        const c = i * 4;
        same = words[p * 8 + i] === (digest.charCodeAt(c) | (digest.charCodeAt(c + 1) << 8) | (digest.charCodeAt(c + 2) << 16) | (digest.charCodeAt(c + 3) << 24));
      }
      if (same) return p;
    }
    return -1;
  }

  /** The limits at position `p`: one object per class of limits, made when first asked for. */
  private limitsAt(p: number): Limits {
    const c = this.data.sameLimits ? 0 : this.data.limitClass[p];
    const made = this.classes[c];
    if (made !== undefined) return made;
    const l = this.data.classLimits;
    const n = (k: number): number | null => (l[c * 4 + k] === NO_LIMIT ? null : l[c * 4 + k]);
    return (this.classes[c] = sharedLimits(n(0), n(1), n(2), n(3)));
  }

  /**
   * The entry at `p`: the last one made when it is the same key (a client
   * polling with its key), else a new one, small and dying young, where a
   * cache of entries would hold memory per key.
   */
  private entryAt(p: number, slot = -1): TableEntry {
    const last = this.lastEntry;
    if (last !== null && last.position === p && (slot < 0 || last.hintAt === slot + HINT)) return last;
    const hinted = slot >= 0;
    return (this.lastEntry = new TableEntry(this, p, this.limitsAt(p), this.words, hinted ? this.known.slots : null, hinted ? slot + HINT : 0));
  }
}
