import { ANONS, TYPES } from '../core/vocabulary.js';
import { formatTimecheck } from '../core/service-time.js';
import { ColumnArena, mappedBuffer, sharedCopy } from './arena.js';
import { member, setBit, wordsFor, type BitsetFamily } from './bitset.js';
import { HOSTING, HOSTING_KNOWN, MAX_LINE_BYTES, MAX_V6_LINE_BYTES, MOBILE, MOBILE_KNOWN, READ_SLACK, packKey, type ByteStrings, type Network, type NetworkColumn, type StoreColumns, type StoreMeta } from './columns.js';
import { csvField, packStrings, writeAscii, writeIPv4, writeUint } from './encode.js';
import { recordPrints, type ExitsV6 } from './history.js';
import { radixSortIndices } from './radix-sort.js';

/** Bytes per record of the columns a store keeps as they are read (permuted into row order later), but the services'. */
const KEPT_BYTES = 4 + 2 + 1 + 1 + 1 + 4 + 4 + 4 + 2 + 4 + 4 + 1;
const KEPT_COLUMNS = 13;

/** The room of a column as bytes. */
const bytesOf = (room: Uint32Array): Uint8Array => new Uint8Array(room.buffer, room.byteOffset, room.length);

/**
 * `col`, whose first `n` items are written, as the next wider column over
 * the same room, its items moved: the room's pages past the narrow items
 * are touched only once the ids need them.
 */
export function widened(col: NetworkColumn, n: number): NetworkColumn {
  const wide = col instanceof Uint8Array ? new Uint16Array(col.buffer, col.byteOffset, col.length) : new Uint32Array(col.buffer, col.byteOffset, col.length);
  // From the last item down: item i of the wider column starts at or after the end of every narrower item below i.
  for (let i = n - 1; i >= 0; i--) wide[i] = col[i];
  return wide;
}

/** Bytes a row's services take: one bit per service of the snapshot, in the narrowest whole column. */
const serviceBytes = (services: number): 1 | 2 | 4 => (services <= 8 ? 1 : services <= 16 ? 2 : 4);

/**
 * Working space per record: the raw ping (8) and checked_at (4) while the
 * records are read, then three lanes of row ids (4 each) and one of sort
 * digits (2) while the store is built. It is one buffer that the store never
 * holds, given back before the store's last columns are written (buildStore).
 */
const SCRATCH_BYTES = 3 * 4 + 2;

/**
 * Columns for the valid records of a snapshot, indexed by record number in
 * file order, with room for `capacity` records of `services` services. The kept columns are carved
 * from one buffer that becomes the store's; ping and checked_at are read
 * into the scratch and kept as ranks.
 */
export function recordColumns(capacity: number, services: number) {
  const width = serviceBytes(services);
  const kept = new ColumnArena(capacity * (KEPT_BYTES + width) + KEPT_COLUMNS * 8);
  const scratch = mappedBuffer(capacity * SCRATCH_BYTES);
  return {
    ip: kept.u32(capacity),
    port: kept.u16(capacity),
    type: kept.u8(capacity),
    anon: kept.u8(capacity),
    works: kept.u8(capacity),
    /** Room for 32 bits a record; the ranks narrow it to 16 when they fit (see narrowest). */
    pingRank: kept.u32(capacity) as Uint16Array | Uint32Array,
    timeRank: kept.u32(capacity) as Uint16Array | Uint32Array,
    ipOut: kept.u32(capacity),
    country: kept.u16(capacity),
    city: kept.u32(capacity),
    /** Room for 32 bits a record, written 8 bits wide while the ids fit, then 16 (see widened): a snapshot that places few exits pays little. */
    network: bytesOf(kept.u32(capacity)) as NetworkColumn,
    netFlags: kept.u8(capacity),
    services: width === 1 ? kept.u8(capacity) : width === 2 ? kept.u16(capacity) : kept.u32(capacity),
    ping: new Float64Array(scratch, 0, capacity),
    checkedAt: new Uint32Array(scratch, capacity * 8, capacity),
    scratch,
  };
}

export type RecordColumns = ReturnType<typeof recordColumns>;

/** The valid records of a snapshot, as the snapshot stage extracts them while it decodes. */
export interface ExtractedRecords {
  readonly serviceNames: readonly string[];
  /** Records in the columns. */
  readonly count: number;
  readonly skipped: number;
  readonly skipReasons: string[];
  readonly skipCounts: Record<string, number>;
  readonly columns: RecordColumns;
  readonly cities: Array<{ ru: string; en: string }>;
  /** The exits' networks by id (the `network` column); id 0 is unknown (AS number 0, no organisation). */
  readonly networks: Network[];
  /** Whether any record has network flags (`netFlags` not 0). */
  readonly anyNetFlags: boolean;
  /**
   * The records whose ip_out is an IPv6 address, ascending, and the
   * addresses' texts (RFC 5952): such a record's `ipOut` is its text's index.
   */
  readonly exitsV6: ExitsV6;
  /**
   * The records whose ip is an IPv6 address, ascending, the distinct
   * addresses' texts (RFC 5952) and their words (4 each, as an
   * AddressTable): such a record's `ip` is its address's index.
   */
  readonly entriesV6: { readonly records: readonly number[]; readonly texts: readonly string[]; readonly words: ArrayLike<number> };
  /** Country codes in alphabetical order; renumbers the country column to match. */
  countries(): string[];
}

/** The widest span of whole values ranked through a table indexed by value (a week of seconds fits). */
const TABLE_SPAN = 1 << 20;

/**
 * Writes the rank of each of values[0..n) among their distinct values (from
 * the largest when `fromEnd`) and returns those distinct values, ascending.
 * Whole numbers of a narrow span (times, pings in ms) are ranked through a
 * table indexed by value, others through a map; both are garbage once the
 * ranks are written. The ranks go into the column `rankColumn` gives for the
 * number of distinct values.
 */
function rankValues(values: Float64Array | Uint32Array, n: number, rankColumn: (distinct: number) => RankColumn, fromEnd: boolean): { distinct: Float64Array; rank: RankColumn } {
  let min = Infinity;
  let max = -Infinity;
  let whole = true;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v < min) min = v;
    if (v > max) max = v;
    if (v !== Math.floor(v)) whole = false;
  }
  let distinct: Float64Array;
  let rankOf: (v: number) => number;
  if (n > 0 && whole && max - min < TABLE_SPAN) {
    const table: number[] = new Array<number>(max - min + 1).fill(-1);
    for (let i = 0; i < n; i++) table[values[i] - min] = 0;
    let k = 0;
    for (let d = 0; d < table.length; d++) if (table[d] === 0) table[d] = k++;
    distinct = new Float64Array(k);
    for (let d = 0; d < table.length; d++) if (table[d] >= 0) distinct[table[d]] = min + d;
    rankOf = (v) => table[v - min];
  } else {
    const set = new Set<number>();
    for (let i = 0; i < n; i++) set.add(values[i]);
    distinct = Float64Array.from(set).sort();
    const index = new Map<number, number>();
    distinct.forEach((v, k) => index.set(v, k));
    rankOf = (v) => index.get(v)!;
  }
  const last = distinct.length - 1;
  const rank = rankColumn(distinct.length);
  for (let i = 0; i < n; i++) rank[i] = fromEnd ? last - rankOf(values[i]) : rankOf(values[i]);
  return { distinct, rank };
}

type RankColumn = Uint16Array | Uint32Array;

/**
 * The column ranks among `distinct` values are written in: 16 bits of the
 * 32-bit room when they fit, and the other half of the room is never
 * touched, so it takes no memory.
 */
const narrowest = (room: RankColumn) => (distinct: number): RankColumn =>
  distinct <= 65536 ? new Uint16Array(room.buffer, room.byteOffset, room.length) : room;

/** One pass: the items written into `roomBytes` of the arena, then the block cut to size. */
function byteStrings(arena: ColumnArena, count: number, roomBytes: number, write: (buf: Uint8Array, pos: number, row: number) => number): ByteStrings {
  const off = arena.u32(count + 1);
  const room = arena.u8(roomBytes + READ_SLACK);
  let pos = 0;
  for (let r = 0; r < count; r++) off[r + 1] = pos = write(room, pos, r);
  return { bytes: arena.shrink(room, pos + READ_SLACK), off };
}

type Column = Uint8Array | Uint16Array | Uint32Array;

/** The same kind of array as `like`, over `length` items of the scratch at `offset`. */
function scratchView<T extends Column>(like: T, scratch: ArrayBuffer, offset: number, length: number): T {
  const Kind = like.constructor as new (buffer: ArrayBuffer, offset: number, length: number) => T;
  return new Kind(scratch, offset, length);
}

/** col[r] = col[out[r]] for the rows of `out`, in place through `tmp`; returns the first out.length items. */
function permute<T extends Column>(col: T, out: Uint32Array, tmp: T): T {
  const rows = out.length;
  for (let r = 0; r < rows; r++) tmp[r] = col[out[r]];
  col.set(tmp.subarray(0, rows) as never);
  return col.subarray(0, rows) as T;
}

/** An empty family of `count` bitsets over `bits` bits, in the arena. */
function family(arena: ColumnArena, count: number, bits: number): BitsetFamily {
  const words = wordsFor(bits);
  return { words, data: arena.u32(Math.max(1, count * words)) };
}

/**
 * The address order's columns, from the records' `kept` (ordered by ip,
 * port, type, still indexed by record) and each record's row: `byAddress`,
 * `addrId` per row, and the records' prints and keys in address order.
 */
function addressColumns(arena: ColumnArena, x: RecordColumns, kept: Uint32Array, rowOf: Uint32Array, prints: Uint32Array, v6: RecordFamily) {
  const rows = kept.length;
  const byAddress = arena.u32(rows);
  const addrId = arena.u32(rows);
  const addrPrint = arena.u32(rows * 2);
  const addrKey = arena.f64(rows);
  let addrCount = 0;
  for (let j = 0; j < rows; j++) {
    const v = kept[j];
    const p = j > 0 ? kept[j - 1] : -1;
    if (p < 0 || x.ip[p] !== x.ip[v] || x.port[p] !== x.port[v] || v6(p) !== v6(v)) addrCount++;
    const r = (byAddress[j] = rowOf[v]);
    addrId[r] = addrCount - 1;
    addrPrint[j * 2] = prints[v * 2];
    addrPrint[j * 2 + 1] = prints[v * 2 + 1];
    addrKey[j] = packKey(x.ip[v], x.port[v], x.type[v], v6(v));
  }
  return { byAddress, addrId, addrPrint, addrKey, addrCount };
}

/** Whether a record (by record number) has an IPv6 entry. */
type RecordFamily = (v: number) => boolean;

/** The items of `order`, IPv4 records first, into `into`: a stable partition. */
function familiesInOrder(order: Uint32Array, into: Uint32Array, v6: RecordFamily): Uint32Array {
  let k = 0;
  for (let j = 0; j < order.length; j++) if (!v6(order[j])) into[k++] = order[j];
  for (let j = 0; j < order.length; j++) if (v6(order[j])) into[k++] = order[j];
  return into.subarray(0, order.length);
}

/**
 * Ranks the IPv6 entry addresses: each such record's `ip` becomes the index
 * of its address in the table, ascending (the store's `v6Entries`).
 * Returns the table, the texts by index, and the records' family.
 */
function rankEntriesV6(records: ExtractedRecords, ip: Uint32Array): { table: Uint32Array; texts: string[]; v6: RecordFamily } {
  const { records: list, texts, words: w } = records.entriesV6;
  if (list.length === 0) return { table: new Uint32Array(new SharedArrayBuffer(0)), texts: [], v6: () => false };
  const ids = Array.from(texts, (_, i) => i).sort((a, b) => w[a * 4] - w[b * 4] || w[a * 4 + 1] - w[b * 4 + 1] || w[a * 4 + 2] - w[b * 4 + 2] || w[a * 4 + 3] - w[b * 4 + 3]);
  const rank = new Uint32Array(ids.length);
  const table = new Uint32Array(new SharedArrayBuffer(ids.length * 16));
  ids.forEach((id, k) => {
    rank[id] = k;
    for (let i = 0; i < 4; i++) table[k * 4 + i] = w[id * 4 + i];
  });
  const family = new Uint32Array(wordsFor(records.count));
  for (const v of list) {
    ip[v] = rank[ip[v]];
    setBit(family, v);
  }
  return { table, texts: ids.map((id) => texts[id]), v6: (v) => (family[v >>> 5] & (1 << (v & 31))) !== 0 };
}

/** Marks in `bits` the rows of the records (`records`, by record number) that were kept, not dropped as duplicates; returns how many. */
function exitRows(records: readonly number[], rowOf: Uint32Array, out: Uint32Array, bits: Uint32Array): number {
  let n = 0;
  for (const v of records) {
    const r = rowOf[v];
    if (r < out.length && out[r] === v) {
      setBit(bits, r);
      n++;
    }
  }
  return n;
}

/**
 * Hands a buffer's memory over to a copy that nothing holds: every view of
 * it is empty from here, and the memory goes at the next collection,
 * however many views of it are still in reach.
 */
function detach(buffer: ArrayBuffer): void {
  structuredClone(buffer, { transfer: [buffer] });
}

/** Bytes of the derived columns of `rows` rows (see buildStore), with room for each column's alignment. */
function derivedBytes(rows: number, sets: number, cities: number, networks: number, times: number): number {
  const perRow = 5 * 4 + (MAX_LINE_BYTES + 4) + 1 + 4 + 8 + 8;
  return rows * perRow + sets * Math.max(1, wordsFor(rows)) * 4 + (cities + 1) * 4 + (networks + 1) * 4 + times * 19 + 3 * READ_SLACK + 26 * 8;
}

/**
 * The rows of each id of `column` (ids below `count`), ascending: id k's
 * rows are rows[start[k] .. start[k + 1]). With `skipZero`, the rows of id 0
 * (unknown, which no filter asks for) are left out.
 */
function postings(arena: ColumnArena, column: Uint32Array | NetworkColumn, count: number, skipZero = false): { start: Uint32Array; rows: Uint32Array } {
  const rows = column.length;
  const start = arena.u32(count + 1);
  for (let r = 0; r < rows; r++) start[column[r] + 1]++;
  if (skipZero) start[1] = 0;
  for (let k = 0; k < count; k++) start[k + 1] += start[k];
  const list = arena.u32(start[count]);
  const fill = start.slice(0, count);
  for (let r = 0; r < rows; r++) if (!skipZero || column[r] !== 0) list[fill[column[r]]++] = r;
  return { start, rows: list };
}

/**
 * Builds the columnar store from the valid records of a snapshot. Of
 * duplicates of one (ip, port, type) the latest `checked_at` is kept, and on
 * a tie the one later in the file. `contentHash` identifies the snapshot's
 * bytes: instances that load one file agree on it (it seeds the ETags).
 *
 * Memory: the kept columns are permuted into row order where they are, the
 * orders are sorted in the records' scratch, and the derived columns go into
 * one more buffer; nothing else grows with the records. The scratch is
 * detached once the orders are sorted, and `release` is called then (a
 * build thread collects its garbage there), so the rest of the store is
 * written in the memory the scratch gave back.
 */
export function buildStore(records: ExtractedRecords, generatedAt: number, contentHash: string, release: () => void = () => undefined): { columns: StoreColumns; meta: StoreMeta } {
  const services = records.serviceNames;
  const countries = records.countries();
  const m = records.count;
  const x = records.columns;

  // Pings and times become ranks: the store keeps the distinct values and their texts once.
  const pings = rankValues(x.ping, m, narrowest(x.pingRank), false);
  const checks = rankValues(x.checkedAt, m, narrowest(x.timeRank), true);
  // Kept by the store: in shared memory, as its other columns (store/arena.ts).
  const pingValues = sharedCopy(pings.distinct);
  const times = sharedCopy(Uint32Array.from(checks.distinct).reverse());
  x.pingRank = pings.rank;
  x.timeRank = checks.rank;

  // From here the raw pings and times are gone: the scratch is three lanes of ids and the digits.
  const capacity = x.ip.length;
  const lane = (k: number): Uint32Array => new Uint32Array(x.scratch, k * 4 * capacity, m);
  const lanes = [lane(0), lane(1), lane(2)];
  const digits = new Uint16Array(x.scratch, 12 * capacity, m);
  const freeLane = (...used: Uint32Array[]): Uint32Array => lanes.find((l) => !used.some((u) => u.byteOffset === l.byteOffset))!;

  // Identity order (ip, port, type), freshest first within one identity; the
  // initial reversed order makes "later in the file" win ties.
  const reversed = lanes[0];
  for (let i = 0; i < m; i++) reversed[i] = m - 1 - i;
  const entriesV6 = rankEntriesV6(records, x.ip);
  const v6 = entriesV6.v6;
  const sorted = radixSortIndices(reversed, [
    { column: x.timeRank, descending: false }, { column: x.type, descending: false },
    { column: x.port, descending: false }, { column: x.ip, descending: false },
  ], lanes[1], digits);
  // Every IPv4 record before every IPv6 one, each family in the order of the sort.
  const identity = records.entriesV6.records.length === 0 ? sorted : familiesInOrder(sorted, freeLane(sorted), v6);
  let rows = 0;
  for (let j = 0; j < m; j++) {
    const v = identity[j];
    const p = rows > 0 ? identity[rows - 1] : -1;
    if (p >= 0 && x.ip[p] === x.ip[v] && x.port[p] === x.port[v] && x.type[p] === x.type[v] && v6(p) === v6(v)) continue;
    identity[rows++] = v;
  }
  const kept = identity.subarray(0, rows);

  // Output order: checked_at desc, ping asc, then ip, port, type, which the
  // identity order already has and stable passes keep.
  const start = freeLane(kept).subarray(0, rows);
  start.set(kept);
  const out = radixSortIndices(start, [{ column: x.pingRank, descending: false }, { column: x.timeRank, descending: false }], freeLane(kept, start), digits);
  const rowOf = freeLane(kept, out);
  for (let r = 0; r < rows; r++) rowOf[out[r]] = r;

  const arena = new ColumnArena(derivedBytes(rows, TYPES.length + ANONS.length + countries.length + services.length + 3 + 4, records.cities.length, records.networks.length, times.length) + records.entriesV6.records.length * (MAX_V6_LINE_BYTES - MAX_LINE_BYTES));
  const prints = recordPrints(x, m, pingValues, times, countries, records.cities, records.networks, records.exitsV6);
  const { byAddress, addrId, addrPrint, addrKey, addrCount } = addressColumns(arena, x, kept, rowOf, prints, v6);
  const exitV6Bits = family(arena, 1, rows);
  const exitV6Rows = exitRows(records.exitsV6.records, rowOf, out, member(exitV6Bits, 0));
  const ipvBits = family(arena, 2, rows);
  const [v4Rows, v6Rows] = [member(ipvBits, 0), member(ipvBits, 1)];
  let ipv6Entries = 0;
  if (records.entriesV6.records.length === 0) {
    // Every row is IPv4: whole words at once.
    v4Rows.fill(-1 >>> 0, 0, rows >>> 5);
    if ((rows & 31) !== 0) v4Rows[rows >>> 5] = (1 << (rows & 31)) - 1;
  } else {
    for (let r = 0; r < rows; r++) {
      const isV6 = v6(out[r]);
      setBit(isV6 ? v6Rows : v4Rows, r);
      ipv6Entries += Number(isV6);
    }
  }

  // The kept columns into row order, through a lane that is free again.
  const tmpOffset = freeLane(out).byteOffset;
  const inRowOrder = <T extends Column>(col: T): T => permute(col, out, scratchView(col, x.scratch, tmpOffset, rows));
  const c = {
    rows,
    ip: inRowOrder(x.ip), port: inRowOrder(x.port), type: inRowOrder(x.type), anon: inRowOrder(x.anon), works: inRowOrder(x.works),
    pingRank: inRowOrder(x.pingRank), timeRank: inRowOrder(x.timeRank), ipOut: inRowOrder(x.ipOut),
    country: inRowOrder(x.country), city: inRowOrder(x.city), services: inRowOrder(x.services),
    // Columns of zeros stay untouched, so their pages cost nothing: a snapshot without who runs its exits pays no memory for them.
    network: records.networks.length > 1 ? inRowOrder(x.network) : x.network.subarray(0, rows),
    netFlags: records.anyNetFlags ? inRowOrder(x.netFlags) : x.netFlags.subarray(0, rows),
  };

  // The other orders (docs/api.md, Parameters); stable passes over the row order keep it for ties.
  const rowOrder = (): Uint32Array => {
    const order = lanes[0].subarray(0, rows);
    for (let r = 0; r < rows; r++) order[r] = r;
    return order;
  };
  const rowDigits = digits.subarray(0, rows);
  const byPing = arena.copy(radixSortIndices(rowOrder(), [{ column: c.pingRank, descending: false }], lanes[1], rowDigits));
  const byWorks = arena.copy(radixSortIndices(rowOrder(), [{ column: c.works, descending: true }], lanes[1], rowDigits));
  // The scratch and the prints are done with: they go now, before the rest of the store is written, not with the build.
  detach(x.scratch);
  detach(prints.buffer as ArrayBuffer);
  release();

  const ipLen = arena.u8(rows);
  let maxLineBytes = 0;
  let maxIpBytes = 0;
  const lines = byteStrings(arena, rows, rows * MAX_LINE_BYTES + records.entriesV6.records.length * (MAX_V6_LINE_BYTES - MAX_LINE_BYTES), (buf, pos, r) => {
    const begin = pos;
    if ((v6Rows[r >>> 5] & (1 << (r & 31))) === 0) pos = writeIPv4(buf, pos, c.ip[r]);
    else {
      // An IPv6 address is bracketed wherever a port follows it (docs/api.md, IPv6).
      buf[pos++] = 91;
      pos = writeAscii(buf, pos, entriesV6.texts[c.ip[r]]);
      buf[pos++] = 93;
    }
    ipLen[r] = pos - begin;
    buf[pos++] = 58; // ':'
    pos = writeUint(buf, pos, c.port[r]);
    buf[pos] = 10;
    maxLineBytes = Math.max(maxLineBytes, pos + 1 - begin);
    maxIpBytes = Math.max(maxIpBytes, ipLen[r]);
    return pos + 1;
  });

  const typeBits = family(arena, TYPES.length, rows);
  const anonBits = family(arena, ANONS.length, rows);
  const countryBits = family(arena, countries.length, rows);
  const serviceBits = family(arena, services.length, rows);
  const typeSets = TYPES.map((_, i) => member(typeBits, i));
  const anonSets = ANONS.map((_, i) => member(anonBits, i));
  const countrySets = countries.map((_, i) => member(countryBits, i));
  const serviceSets = services.map((_, i) => member(serviceBits, i));
  // A flag's member 0 holds the rows where it is known and false, member 1 where it is true.
  const hostingBits = family(arena, 2, rows);
  const mobileBits = family(arena, 2, rows);
  const hostingSets = [member(hostingBits, 0), member(hostingBits, 1)];
  const mobileSets = [member(mobileBits, 0), member(mobileBits, 1)];
  for (let r = 0; r < rows; r++) {
    setBit(typeSets[c.type[r]], r);
    setBit(anonSets[c.anon[r]], r);
    setBit(countrySets[c.country[r]], r);
    for (let mask = c.services[r], s = 0; mask !== 0; mask >>>= 1, s++) if (mask & 1) setBit(serviceSets[s], r);
    const f = c.netFlags[r];
    if (f & HOSTING_KNOWN) setBit(hostingSets[(f & HOSTING) === 0 ? 0 : 1], r);
    if (f & MOBILE_KNOWN) setBit(mobileSets[(f & MOBILE) === 0 ? 0 : 1], r);
  }

  const { start: cityStart, rows: cityRows } = postings(arena, c.city, records.cities.length);
  const { start: networkStart, rows: networkRows } = postings(arena, c.network, records.networks.length, true);

  // A ping of whole milliseconds, in seconds as JSON writes it.
  const pingText = packStrings(Array.from(pingValues, (ms) => String(ms / 1000)));
  const timecheck = arena.u8(times.length * 19 + READ_SLACK);
  times.forEach((t, k) => writeAscii(timecheck, k * 19, formatTimecheck(t)));

  const columns: StoreColumns = {
    ...c, pingValues, times, addrId, addrCount, byAddress, addrPrint, addrKey, byPing, byWorks, lines, ipLen, pingText, timecheck,
    typeBits, anonBits, countryBits, serviceBits, exitV6Bits, exitV6Text: packStrings(records.exitsV6.texts), v6Entries: entriesV6.table, ipvBits, cityStart, cityRows,
    networkStart, networkRows, hostingBits, mobileBits,
    networkAsnJson: packStrings(records.networks.map((n) => (n.asn === 0 ? 'null' : String(n.asn)))),
    networkOrgJson: packStrings(records.networks.map((n) => JSON.stringify(n.org))),
    cityJsonRu: packStrings(records.cities.map((k) => JSON.stringify(k.ru))),
    cityJsonEn: packStrings(records.cities.map((k) => JSON.stringify(k.en))),
    networkAsnCsv: packStrings(records.networks.map((n) => (n.asn === 0 ? '' : String(n.asn)))),
    networkOrgCsv: packStrings(records.networks.map((n) => csvField(n.org))),
    cityCsvRu: packStrings(records.cities.map((k) => csvField(k.ru))),
    cityCsvEn: packStrings(records.cities.map((k) => csvField(k.en))),
  };
  let maxPingText = 1;
  for (let k = 0; k < pingValues.length; k++) maxPingText = Math.max(maxPingText, pingText.off[k + 1] - pingText.off[k]);
  const meta: StoreMeta = {
    generatedAt, contentHash, services: [...services], countries, cities: records.cities, networks: records.networks,
    skipped: records.skipped, duplicates: m - rows, skipReasons: records.skipReasons, skipCounts: records.skipCounts, maxPingText, ipv6Exits: exitV6Rows,
    ipv6Entries, maxLineBytes, maxIpBytes,
  };
  return { columns, meta };
}
