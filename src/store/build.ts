import { ANONS, TYPES } from '../core/vocabulary.js';
import { formatTimecheck } from '../core/service-time.js';
import { ColumnArena } from './arena.js';
import { member, setBit, wordsFor, type BitsetFamily } from './bitset.js';
import { MAX_LINE_BYTES, READ_SLACK, type ByteStrings, type StoreColumns, type StoreMeta } from './columns.js';
import { packStrings, writeAscii, writeIPv4, writeUint } from './encode.js';
import { radixSortIndices, uint32Digits } from './radix-sort.js';

/**
 * Columns for the valid records of a snapshot, indexed by record number in
 * file order, with room for `capacity` records.
 */
export function recordColumns(capacity: number) {
  return {
    ip: new Uint32Array(capacity),
    port: new Uint16Array(capacity),
    type: new Uint8Array(capacity),
    anon: new Uint8Array(capacity),
    works: new Uint8Array(capacity),
    ping: new Float64Array(capacity),
    checkedAt: new Uint32Array(capacity),
    country: new Uint16Array(capacity),
    city: new Uint32Array(capacity),
    services: new Uint32Array(capacity),
    ipOut: new Uint32Array(capacity),
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
  readonly columns: RecordColumns;
  readonly cities: Array<{ ru: string; en: string }>;
  /** Country codes in alphabetical order; renumbers the country column to match. */
  countries(): string[];
}

/** Sort key for ping: the value itself, or its rank where some ping exceeds 32 bits. */
function pingSortKey(ping: Float64Array, n: number): (i: number) => number {
  let max = 0;
  for (let i = 0; i < n; i++) if (ping[i] > max) max = ping[i];
  if (max <= 0xffffffff) return (i) => ping[i];
  const distinct = Float64Array.from(new Set(ping.subarray(0, n))).sort();
  const rank = new Map<number, number>();
  distinct.forEach((v, r) => rank.set(v, r));
  return (i) => rank.get(ping[i])!;
}

/** One pass: each item written at most `maxBytes` long into the arena, then the block cut to size. */
function byteStrings(arena: ColumnArena, count: number, maxBytes: number, write: (buf: Uint8Array, pos: number, row: number) => number): ByteStrings {
  const off = arena.u32(count + 1);
  const room = arena.u8(count * maxBytes + READ_SLACK);
  let pos = 0;
  for (let r = 0; r < count; r++) off[r + 1] = pos = write(room, pos, r);
  return { bytes: arena.shrink(room, pos + READ_SLACK), off };
}

type Column = Uint8Array | Uint16Array | Uint32Array | Float64Array;

/** dst[r] = src[order[r]], a column at a time, so the random reads stay in one array. */
function gather<T extends Column>(arena: ColumnArena, src: T, order: Uint32Array, rows: number): T {
  const dst = arena.copy(src.subarray(0, rows) as T);
  for (let r = 0; r < rows; r++) dst[r] = src[order[r]];
  return dst;
}

/** An empty family of `count` bitsets over `bits` bits, in the arena. */
function family(arena: ColumnArena, count: number, bits: number): BitsetFamily {
  const words = wordsFor(bits);
  return { words, data: arena.u32(Math.max(1, count * words)) };
}

/** Bytes of the columns of `rows` rows (see buildStore), with room for each column's alignment. */
function columnBytes(rows: number, maxPing: number, sets: number, cities: number): number {
  const perRow = 31 + 4 * 4 + 1 + (MAX_LINE_BYTES + 4) + (15 + 4) + (maxPing + 4) + 19 + 4;
  return rows * perRow + sets * Math.max(1, wordsFor(rows)) * 4 + (cities + 1) * 4 + 4 * READ_SLACK + 40 * 8;
}

/**
 * Builds the columnar store from the valid records of a snapshot. Of
 * duplicates of one (ip, port, type) the latest `checked_at` is kept, and on
 * a tie the one later in the file. `contentHash` identifies the snapshot's
 * bytes: instances that load one file agree on it (it seeds the ETags).
 */
export function buildStore(records: ExtractedRecords, generatedAt: number, contentHash: string): { columns: StoreColumns; meta: StoreMeta } {
  const services = records.serviceNames;
  const countries = records.countries();
  const m = records.count;
  const x = records.columns;
  const typeDigits = Uint16Array.from(x.type.subarray(0, m));
  const portDigits = x.port.subarray(0, m);
  const ipDigits = uint32Digits((i) => x.ip[i], m, false);
  const checkedDesc = uint32Digits((i) => x.checkedAt[i], m, true);

  // Identity order (ip, port, type), freshest first within one identity; the
  // initial reversed order makes "later in the file" win ties.
  const reversed = new Uint32Array(m);
  for (let i = 0; i < m; i++) reversed[i] = m - 1 - i;
  const identity = radixSortIndices(reversed, [...checkedDesc, typeDigits, portDigits, ...ipDigits]);
  const keptIdentity = new Uint32Array(m);
  let rows = 0;
  for (let j = 0; j < m; j++) {
    const v = identity[j];
    const prev = j > 0 ? identity[j - 1] : -1;
    if (prev >= 0 && x.ip[prev] === x.ip[v] && x.port[prev] === x.port[v] && x.type[prev] === x.type[v]) continue;
    keptIdentity[rows++] = v;
  }

  // Output order: checked_at desc, ping asc, then ip, port, type, which the
  // identity order already has and stable passes keep.
  const pingDigits = uint32Digits(pingSortKey(x.ping, m), m, false);
  const out = radixSortIndices(keptIdentity.slice(0, rows), [...pingDigits, ...checkedDesc]);
  const rowOf = new Uint32Array(m);
  for (let r = 0; r < rows; r++) rowOf[out[r]] = r;

  // Pings repeat a lot: format each whole-millisecond value once.
  const pingMemo = new Map<number, string>();
  const pingString = (ms: number): string => {
    let s = pingMemo.get(ms);
    if (s === undefined) pingMemo.set(ms, (s = String(ms / 1000)));
    return s;
  };
  let maxPing = 1;
  for (let j = 0; j < rows; j++) maxPing = Math.max(maxPing, pingString(x.ping[out[j]]).length);
  const arena = new ColumnArena(columnBytes(rows, maxPing, TYPES.length + ANONS.length + countries.length + services.length, records.cities.length));

  const c = {
    rows,
    ip: gather(arena, x.ip, out, rows), port: gather(arena, x.port, out, rows), type: gather(arena, x.type, out, rows), anon: gather(arena, x.anon, out, rows),
    works: gather(arena, x.works, out, rows), ping: gather(arena, x.ping, out, rows), checkedAt: gather(arena, x.checkedAt, out, rows),
    country: gather(arena, x.country, out, rows), city: gather(arena, x.city, out, rows), services: gather(arena, x.services, out, rows),
  };
  // Not a column of the store: only its text is kept.
  const ipOut = new Uint32Array(rows);
  for (let r = 0; r < rows; r++) ipOut[r] = x.ipOut[out[r]];

  const byAddress = arena.u32(rows);
  const addrId = arena.u32(rows);
  // keptIdentity[0..rows) is ordered by ip, port, type.
  let addrCount = 0;
  for (let j = 0; j < rows; j++) {
    const r = (byAddress[j] = rowOf[keptIdentity[j]]);
    const p = j > 0 ? byAddress[j - 1] : -1;
    if (p < 0 || c.ip[p] !== c.ip[r] || c.port[p] !== c.port[r]) addrCount++;
    addrId[r] = addrCount - 1;
  }

  // The other orders (README, Parameters); stable passes over the row order keep it for ties.
  // (The sort may reorder the array it is given: each gets its own.)
  const rowOrder = (): Uint32Array => {
    const order = new Uint32Array(rows);
    for (let r = 0; r < rows; r++) order[r] = r;
    return order;
  };
  const byPing = arena.copy(radixSortIndices(rowOrder(), uint32Digits(pingSortKey(c.ping, rows), rows, false)));
  const byWorks = arena.copy(radixSortIndices(rowOrder(), uint32Digits((r) => c.works[r], rows, true)));

  const ipLen = arena.u8(rows);
  const lines = byteStrings(arena, rows, MAX_LINE_BYTES, (buf, pos, r) => {
    const start = pos;
    pos = writeIPv4(buf, pos, c.ip[r]);
    ipLen[r] = pos - start;
    buf[pos++] = 58; // ':'
    pos = writeUint(buf, pos, c.port[r]);
    buf[pos] = 10;
    return pos + 1;
  });
  const ipOutText = byteStrings(arena, rows, 15, (buf, pos, r) => writeIPv4(buf, pos, ipOut[r]));
  const pingText = byteStrings(arena, rows, maxPing, (buf, pos, r) => writeAscii(buf, pos, pingString(c.ping[r])));

  // Rows are grouped by checked_at: a run repeats the bytes of its first row.
  const timecheck = arena.u8(rows * 19 + READ_SLACK);
  for (let r = 0; r < rows; r++) {
    if (r > 0 && c.checkedAt[r] === c.checkedAt[r - 1]) {
      for (let i = r * 19 - 19, j = r * 19, end = j + 19; j < end; ) timecheck[j++] = timecheck[i++];
    } else {
      writeAscii(timecheck, r * 19, formatTimecheck(c.checkedAt[r]));
    }
  }

  const typeBits = family(arena, TYPES.length, rows);
  const anonBits = family(arena, ANONS.length, rows);
  const countryBits = family(arena, countries.length, rows);
  const serviceBits = family(arena, services.length, rows);
  const typeSets = TYPES.map((_, i) => member(typeBits, i));
  const anonSets = ANONS.map((_, i) => member(anonBits, i));
  const countrySets = countries.map((_, i) => member(countryBits, i));
  const serviceSets = services.map((_, i) => member(serviceBits, i));
  for (let r = 0; r < rows; r++) {
    setBit(typeSets[c.type[r]], r);
    setBit(anonSets[c.anon[r]], r);
    setBit(countrySets[c.country[r]], r);
    for (let mask = c.services[r], s = 0; mask !== 0; mask >>>= 1, s++) if (mask & 1) setBit(serviceSets[s], r);
  }

  const cityCount = records.cities.length;
  const cityStart = arena.u32(cityCount + 1);
  for (let r = 0; r < rows; r++) cityStart[c.city[r] + 1]++;
  for (let k = 0; k < cityCount; k++) cityStart[k + 1] += cityStart[k];
  const cityRows = arena.u32(rows);
  const fill = cityStart.slice(0, cityCount);
  for (let r = 0; r < rows; r++) cityRows[fill[c.city[r]]++] = r;

  const columns: StoreColumns = {
    ...c, addrId, addrCount, byAddress, byPing, byWorks, lines, ipLen, ipOut: ipOutText, pingText, timecheck,
    typeBits, anonBits, countryBits, serviceBits, cityStart, cityRows,
    cityJsonRu: packStrings(records.cities.map((k) => JSON.stringify(k.ru))),
    cityJsonEn: packStrings(records.cities.map((k) => JSON.stringify(k.en))),
  };
  const meta: StoreMeta = {
    generatedAt, contentHash, services: [...services], countries, cities: records.cities,
    skipped: records.skipped, duplicates: m - rows, skipReasons: records.skipReasons, maxPingText: maxPing,
  };
  return { columns, meta };
}
