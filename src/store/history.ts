import { mappedBuffer, sharedBuffer, sharedCopy } from './arena.js';
import { HOSTING, HOSTING_KNOWN, MOBILE, MOBILE_KNOWN, compareKeys, EXIT_IS_ENTRY, type AddressTable, type Network, type StoreColumns, type StoreMeta } from './columns.js';
import { KeyTable, NO_ADDRESSES } from './key-table.js';
import { VERSION_BYTES, VersionWriter, type VersionBatch } from './versions.js';

/** One round of MurmurHash3's 32-bit mixing: `h` after the word `k`. */
function mix(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function finish(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The two seeds of a print's halves. */
const SEEDS = [0x9747b28c, 0x5bd1e995];

/** Two 32-bit hashes of each string, one per seed, at 2i and 2i + 1. */
function stringPrints(strings: readonly string[]): Uint32Array {
  const out = new Uint32Array(strings.length * 2);
  strings.forEach((s, i) => {
    for (let half = 0; half < 2; half++) {
      let h = SEEDS[half];
      for (let k = 0; k < s.length; k++) h = mix(h, s.charCodeAt(k));
      out[i * 2 + half] = finish(mix(h, s.length));
    }
  });
  return out;
}

/** The records of a build whose ip_out is IPv6, ascending, and the texts their `ipOut` indexes. */
export interface ExitsV6 {
  readonly records: readonly number[];
  readonly texts: readonly string[];
}

/** The columns of a build's records that a print reads, one entry per record. */
export interface PrintedFields {
  anon: ArrayLike<number>;
  works: ArrayLike<number>;
  services: ArrayLike<number>;
  network: ArrayLike<number>;
  netFlags: ArrayLike<number>;
  ipOut: ArrayLike<number>;
  timeRank: ArrayLike<number>;
  pingRank: ArrayLike<number>;
  country: ArrayLike<number>;
  city: ArrayLike<number>;
}

/**
 * A 64-bit print of each record's shown values other than its key (anon,
 * works, services, ip_out, checked_at, ping, country, city), as two 32-bit
 * hashes with independent seeds: the history compares prints, not values,
 * to tell a record that changed between two snapshots. Countries and cities
 * enter by name, pings and times by value: ids and ranks differ between
 * snapshots. Two different records share a print with a chance of 2^-64.
 */
export function recordPrints(x: PrintedFields, m: number, pingValues: Float64Array, times: Uint32Array, countries: readonly string[], cities: ReadonlyArray<{ ru: string; en: string }>, networks: readonly Network[], exitsV6: ExitsV6): Uint32Array {
  const countryPrints = stringPrints(countries);
  // An IPv6 exit enters by its text (its `ipOut` is an index of this build's), or as the entry's own, which the key holds.
  const exitPrints = stringPrints(exitsV6.texts);
  let nextV6 = 0;
  const cityPrints = stringPrints(cities.map((c) => `${c.ru}\0${c.en}`));
  const networkPrints = stringPrints(networks.map((n) => `${n.asn}\0${n.org}`));
  const pingBits = new Uint32Array(new Float64Array(pingValues).buffer);
  const prints = new Uint32Array(mappedBuffer(m * 8));
  for (let v = 0; v < m; v++) {
    const ping = x.pingRank[v] * 2;
    const country = x.country[v] * 2;
    const city = x.city[v] * 2;
    for (let half = 0; half < 2; half++) {
      let h = SEEDS[half];
      h = mix(h, x.anon[v] | (x.works[v] << 8));
      h = mix(h, x.services[v]);
      h = mix(h, v !== exitsV6.records[nextV6] ? x.ipOut[v] : x.ipOut[v] === EXIT_IS_ENTRY ? EXIT_IS_ENTRY : exitPrints[x.ipOut[v] * 2 + half]);
      h = mix(h, times[x.timeRank[v]]);
      h = mix(h, pingBits[ping]);
      h = mix(h, pingBits[ping + 1]);
      h = mix(h, countryPrints[country + half]);
      h = mix(h, cityPrints[city + half]);
      h = mix(h, networkPrints[x.network[v] * 2 + half]);
      // The flags as shown: where an AS number came from is not.
      h = mix(h, x.netFlags[v] & (HOSTING_KNOWN | HOSTING | MOBILE_KNOWN | MOBILE));
      prints[v * 2 + half] = finish(h);
    }
    if (v === exitsV6.records[nextV6]) nextV6++;
  }
  return prints;
}


/** A snapshot a store's history still knows, and the keys that left the list when it came in. */
export interface RememberedSnapshot {
  generatedAt: number;
  /** The start of the snapshot's content hash: a cursor names the content too, not only the time. */
  content: string;
  /** The history's own number of the snapshot: rows changed at it carry it. */
  seq: number;
  /** When it was swapped in. */
  loadedAtMs: number;
  /** Keys (see `packKey`) of the snapshot before it that it no longer has, ascending. */
  left: Float64Array;
  /** The addresses its IPv6 keys index. */
  leftV6: AddressTable;
}

/** Characters of the content hash a cursor carries. */
export const CONTENT_CHARS = 8;
const NOTHING_LEFT = new Float64Array(0);
/**
 * Versions kept, at most, per record of the store: past that the oldest
 * batches go, and cursors before them get a change set that may be wider
 * than exact (docs/design.md, Exact change sets). It bounds the versions'
 * memory to VERSION_BYTES times this per record, however fast the list turns over.
 */
export const VERSIONS_PER_RECORD = 2;
/** Rows merged per turn of the event loop while a history is carried over. */
const MERGE_SLICE_ROWS = 64 * 1024;
/** A log of keys that left under this size is copied out of the room it was written in. */
const SMALL_LOG_BYTES = 1024 * 1024;


/**
 * What a store remembers of the snapshots before it (docs/api.md, Keeping a list): per row, the snapshot since which its record is the same (4
 * bytes a row, beside the 16 of the record's print and key in address
 * order in the columns); the snapshots of the last --history-s seconds with
 * the keys each one dropped; and the versions of the records that changed
 * or left during the last --history-exact-s seconds (store/versions.ts).
 * Immutable: each store has its own, sharing the logs and the versions
 * with the one before it.
 */
export class History {
  constructor(
    /** Per row, the `seq` of the snapshot since which the row's record is unchanged. */
    readonly changedAt: Uint32Array,
    /** Oldest first; the last is the store's own snapshot. */
    readonly snapshots: readonly RememberedSnapshot[],
    /** The records each snapshot after the first replaced or dropped, for the snapshots of the last --history-exact-s seconds; oldest first. */
    readonly versions: readonly VersionBatch[] = [],
  ) {}

  /**
   * Whether the versions reach back to the remembered snapshot `at`: every
   * snapshot after it has its batch, so a change set from it is exact.
   */
  exactFrom(at: number): boolean {
    if (at === this.snapshots.length - 1) return true;
    const first = this.versions[0];
    return first !== undefined && first.seq <= this.snapshots[at].seq + 1;
  }

  /** The remembered snapshot of a cursor, or -1 when it is not known (too old, from another chain, or never loaded here). */
  indexOf(generatedAt: number, content: string): number {
    for (let i = this.snapshots.length - 1; i >= 0; i--) {
      const s = this.snapshots[i];
      if (s.generatedAt === generatedAt) return s.content === content ? i : -1;
    }
    return -1;
  }

  /** Versions kept. */
  get versionCount(): number {
    return this.versions.reduce((n, b) => n + b.count, 0);
  }

  /** Bytes held: the column of rows, the logs of keys that left, and the versions. */
  get bytes(): number {
    return this.changedAt.byteLength + this.snapshots.reduce((n, s) => n + s.left.byteLength + s.leftV6.byteLength, 0) + this.versions.reduce((n, b) => n + b.count * VERSION_BYTES + b.v6.byteLength, 0);
  }
}

/** A column of 4 bytes a row, mapped by itself like the store's (see arena.ts): it goes back to the system with its store. */
const rowColumn = (rows: number): Uint32Array => new Uint32Array(sharedBuffer(rows * 4), 0, rows);

/** A history that begins with this snapshot: every row changed at it. */
export function startHistory(c: StoreColumns, meta: StoreMeta, seq: number, nowMs: number): History {
  const changedAt = rowColumn(c.rows).fill(seq);
  return new History(changedAt, [{ generatedAt: meta.generatedAt, content: meta.contentHash.slice(0, CONTENT_CHARS), seq, loadedAtMs: nowMs, left: NOTHING_LEFT, leftV6: NO_ADDRESSES }]);
}

/** What the merge reads of a store: its columns, its names and its history. */
export interface HistorySource {
  c: StoreColumns;
  meta: StoreMeta;
  history: History;
}

/**
 * The history of the store built from `c` and `meta`, carried over from
 * `prev`'s: rows whose record is the same in both keep their `changedAt`,
 * the others get the new snapshot's; the keys of `prev` missing from the new
 * store are logged. The two stores are merged along their address orders,
 * a slice per turn of the event loop. Snapshots that stopped being current
 * more than `historyMs` ago are forgotten.
 *
 * The history starts again (and old cursors get a reset) when the new
 * snapshot is not later than the previous one, or names other services:
 * neither "changed since" nor the meaning of a service bit would hold.
 */
export async function carryHistory(prev: HistorySource | null, c: StoreColumns, meta: StoreMeta, nowMs: number, historyMs: number, exactMs: number): Promise<History> {
  const last = prev?.history.snapshots.at(-1);
  const seq = (last?.seq ?? 0) + 1;
  const content = meta.contentHash.slice(0, CONTENT_CHARS);
  const sameSnapshot = last !== undefined && last.generatedAt === meta.generatedAt && last.content === content;
  if (!prev || !last || (!sameSnapshot && meta.generatedAt <= last.generatedAt) || prev.meta.services.join('\0') !== meta.services.join('\0')) {
    return startHistory(c, meta, seq, nowMs);
  }
  const changedAt = rowColumn(c.rows);
  const versions = sameSnapshot ? null : new VersionWriter(prev.c, prev.meta, seq, nowMs);
  const { left, leftV6 } = await mergeRows(prev, c, changedAt, sameSnapshot ? last.seq : seq, versions);
  const recent = prev.history.snapshots.filter((_, i, all) => i === all.length - 1 || all[i + 1].loadedAtMs >= nowMs - historyMs);
  const snapshots = usable(sameSnapshot ? recent : [...recent, { generatedAt: meta.generatedAt, content, seq, loadedAtMs: nowMs, left, leftV6 }], c.rows);
  const batches = versions ? [...prev.history.versions, versions.finish()] : prev.history.versions;
  return new History(changedAt, snapshots, exactBatches(batches, snapshots[0].seq, nowMs - exactMs, c.rows * VERSIONS_PER_RECORD));
}

/**
 * The newest batches of versions that were made since `sinceMs`, after the
 * oldest snapshot remembered (`firstSeq`; those before serve no cursor),
 * and hold at most `most` versions together.
 */
function exactBatches(batches: readonly VersionBatch[], firstSeq: number, sinceMs: number, most: number): VersionBatch[] {
  let first = batches.length;
  let held = 0;
  while (first > 0) {
    const b = batches[first - 1];
    if (b.seq <= firstSeq || b.loadedAtMs < sinceMs || held + b.count > most) break;
    held += b.count;
    first--;
  }
  return batches.slice(first);
}

/**
 * The snapshots a change set can start from: those since which no more keys
 * left than the store has records (from an older one, the whole list is
 * the smaller answer: see query/changes.ts). So the logs of keys that left
 * hold fewer keys than twice the records, however often the list turns
 * over. What left before the oldest one kept is never read.
 */
function usable(snapshots: RememberedSnapshot[], rows: number): RememberedSnapshot[] {
  let first = snapshots.length - 1;
  let left = 0;
  while (first > 0 && left + snapshots[first].left.length <= rows) left += snapshots[first--].left.length;
  const kept = snapshots.slice(first);
  if (kept[0].left.length > 0) kept[0] = { ...kept[0], left: NOTHING_LEFT, leftV6: NO_ADDRESSES };
  return kept;
}

/** The walk along both address orders, between slices. */
interface Merge {
  p: StoreColumns;
  versions: VersionWriter | null;
  c: StoreColumns;
  prevChanged: Uint32Array;
  changedAt: Uint32Array;
  seq: number;
  /** The next position in each address order. */
  i: number;
  j: number;
  readonly left: Float64Array;
  leftCount: number;
  readonly leftV6: KeyTable;
}

/**
 * Merges the rows of `prev` and of the new columns along their address
 * orders (ip, port, type ascending in both): fills `changedAt` and returns
 * the keys of `prev` the new store has not. A record is the same when the
 * prints of its shown values are (`addrPrint`, made by the build in address
 * order, so both are read in sequence).
 */
async function mergeRows(prev: HistorySource, c: StoreColumns, changedAt: Uint32Array, seq: number, versions: VersionWriter | null): Promise<{ left: Float64Array; leftV6: AddressTable }> {
  // Room for every key of prev, mapped by itself: only the pages written cost memory, and nothing is copied as the log grows.
  const room = new Float64Array(sharedBuffer(prev.c.byAddress.length * 8));
  const m: Merge = { p: prev.c, versions, c, changedAt, seq, i: 0, j: 0, left: room, leftCount: 0, leftV6: new KeyTable(), prevChanged: prev.history.changedAt };
  const rows = c.byAddress.length;
  while (m.j < rows) {
    mergeSlice(m, Math.min(rows, m.j + MERGE_SLICE_ROWS));
    if (m.j < rows) await new Promise((resolve) => setImmediate(resolve));
  }
  while (m.i < m.p.byAddress.length) leave(m, m.i++);
  // A short log gets a buffer of its size (the room goes at the next collection); a long one keeps the pages it wrote.
  const left = m.leftCount * 8 < SMALL_LOG_BYTES ? sharedCopy(m.left.subarray(0, m.leftCount)) : m.left.subarray(0, m.leftCount);
  return { left, leftV6: m.leftV6.table() };
}

/** The merge up to position `stop` of the new store's address order. */
function mergeSlice(m: Merge, stop: number): void {
  const { p, c, prevChanged, changedAt, seq } = m;
  const { byAddress: pKeys, addrKey: pKey, addrPrint: pPrint, v6Entries: pTable } = p;
  const { byAddress: nKeys, addrKey: cKey, addrPrint: cPrint, v6Entries: cTable } = c;
  const ends = pKeys.length;
  // The order of prev's key at i to the new one: an IPv6 key indexes its own store's addresses.
  const order = (i: number, key: number): number => (i < ends ? compareKeys(pKey[i], pTable, key, cTable) : 1);
  let i = m.i;
  for (let j = m.j; j < stop; j++) {
    const rn = nKeys[j];
    const key = cKey[j];
    let d = order(i, key);
    while (d < 0) {
      leave(m, i++);
      d = order(i, key);
    }
    let since = seq;
    if (d === 0) {
      if (pPrint[i * 2] === cPrint[j * 2] && pPrint[i * 2 + 1] === cPrint[j * 2 + 1]) since = prevChanged[pKeys[i]];
      else m.versions?.add(pKeys[i], pKey[i], i, prevChanged[pKeys[i]]);
      i++;
    }
    changedAt[rn] = since;
  }
  m.i = i;
  m.j = stop;
}

/** Logs the key of the row at position `i` of `prev`'s address order, which the new store has not, and keeps its version. */
function leave(m: Merge, i: number): void {
  const r = m.p.byAddress[i];
  const key = m.p.addrKey[i];
  m.left[m.leftCount++] = m.leftV6.add(key, m.p.v6Entries);
  m.versions?.add(r, key, i, m.prevChanged[r]);
}
