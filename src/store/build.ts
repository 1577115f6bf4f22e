import { ANONS, DEFAULT_SERVICES, TYPES, parseIPv4, recordProblem, type SnapshotRecord } from '../snapshot/format.js';
import { formatTimecheck } from '../core/service-time.js';
import { newFamily, member, setBit } from './bitset.js';
import type { ByteStrings, StoreColumns, StoreMeta } from './columns.js';
import { ipv4Length, packStrings, uintLength, writeAscii, writeIPv4, writeUint } from './encode.js';
import { radixSortIndices, uint32Digits } from './radix-sort.js';

const MAX_SKIP_REASONS = 10;
const TYPE_CODE = new Map<string, number>(TYPES.map((t, i) => [t, i]));
const ANON_CODE = new Map<string, number>(ANONS.map((a, i) => [a, i]));

/**
 * Takes records one at a time, as they are decoded, checks each (API.md 2) and
 * keeps its fields in columns indexed by valid-record number. Nothing of the
 * record object outlives the call.
 */
export class RecordExtractor {
  count = 0;
  skipped = 0;
  readonly skipReasons: string[] = [];
  readonly ip: Uint32Array;
  readonly port: Uint16Array;
  readonly type: Uint8Array;
  readonly anon: Uint8Array;
  readonly works: Uint8Array;
  readonly ping: Float64Array;
  readonly checkedAt: Uint32Array;
  readonly country: Uint16Array;
  readonly city: Uint32Array;
  readonly services: Uint32Array;
  readonly ipOut: Uint32Array;
  readonly cities: Array<{ ru: string; en: string }> = [{ ru: '', en: '' }];
  private readonly countryIds = new Map<string, number>();
  private readonly cityIds = new Map<string, number>([['\u0000', 0]]);
  private readonly serviceIndex: Map<string, number>;

  constructor(readonly serviceNames: readonly string[], capacity: number) {
    this.serviceIndex = new Map(serviceNames.map((s, i) => [s, i]));
    this.ip = new Uint32Array(capacity);
    this.port = new Uint16Array(capacity);
    this.type = new Uint8Array(capacity);
    this.anon = new Uint8Array(capacity);
    this.works = new Uint8Array(capacity);
    this.ping = new Float64Array(capacity);
    this.checkedAt = new Uint32Array(capacity);
    this.country = new Uint16Array(capacity);
    this.city = new Uint32Array(capacity);
    this.services = new Uint32Array(capacity);
    this.ipOut = new Uint32Array(capacity);
  }

  add(raw: unknown, index: number): void {
    const problem = recordProblem(raw, this.serviceIndex);
    if (problem !== null) {
      this.skipped++;
      if (this.skipReasons.length < MAX_SKIP_REASONS) this.skipReasons.push(`record ${index}: ${problem}`);
      return;
    }
    const r = raw as SnapshotRecord;
    const m = this.count++;
    this.ip[m] = parseIPv4(r.ip);
    this.port[m] = r.port;
    this.type[m] = TYPE_CODE.get(r.type)!;
    this.anon[m] = ANON_CODE.get(r.anon)!;
    this.works[m] = r.works;
    this.ping[m] = Math.round(r.ping_ms);
    this.checkedAt[m] = r.checked_at;
    this.ipOut[m] = typeof r.ip_out === 'string' ? parseIPv4(r.ip_out) : this.ip[m];

    const country = r.country.toUpperCase();
    let countryId = this.countryIds.get(country);
    if (countryId === undefined) this.countryIds.set(country, (countryId = this.countryIds.size));
    this.country[m] = countryId;

    const ru = r.city?.ru ?? '';
    const en = r.city?.en ?? '';
    const cityKey = ru + '\u0000' + en;
    let cityId = this.cityIds.get(cityKey);
    if (cityId === undefined) {
      this.cityIds.set(cityKey, (cityId = this.cities.length));
      this.cities.push({ ru, en });
    }
    this.city[m] = cityId;

    let mask = 0;
    if (r.services) for (const s of r.services) mask |= 1 << this.serviceIndex.get(s)!;
    this.services[m] = mask >>> 0;
  }

  /** Country codes in alphabetical order (ids do not depend on record order); renumbers the column. */
  countries(): string[] {
    const byFirstSeen = [...this.countryIds.keys()];
    const sorted = [...byFirstSeen].sort();
    const remap = byFirstSeen.map((c) => sorted.indexOf(c));
    for (let m = 0; m < this.count; m++) this.country[m] = remap[this.country[m]];
    return sorted;
  }
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

function byteStrings(count: number, lengthOf: (row: number) => number, write: (buf: Uint8Array, pos: number, row: number) => number): ByteStrings {
  const off = new Uint32Array(count + 1);
  for (let r = 0; r < count; r++) off[r + 1] = off[r] + lengthOf(r);
  const bytes = new Uint8Array(off[count]);
  for (let r = 0; r < count; r++) write(bytes, off[r], r);
  return { bytes, off };
}

/**
 * Builds the columnar store from a decoded snapshot whose top level is valid.
 * Invalid records are skipped and counted; of duplicates of one (ip, port,
 * type) the latest `checked_at` is kept, and on a tie the one later in the file.
 */
/** For callers that hold the records already (tests, tools): the same checks and build. */
export function buildFromRecords(proxies: readonly unknown[], services: readonly string[] = DEFAULT_SERVICES, generatedAt = 0): { columns: StoreColumns; meta: StoreMeta } {
  const x = new RecordExtractor(services, proxies.length);
  proxies.forEach((r, i) => x.add(r, i));
  return buildStore(x, generatedAt);
}

export function buildStore(x: RecordExtractor, generatedAt: number): { columns: StoreColumns; meta: StoreMeta } {
  const services = x.serviceNames;
  const countries = x.countries();
  const m = x.count;
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

  const c = {
    rows,
    ip: new Uint32Array(rows), port: new Uint16Array(rows), type: new Uint8Array(rows), anon: new Uint8Array(rows),
    works: new Uint8Array(rows), ping: new Float64Array(rows), checkedAt: new Uint32Array(rows),
    country: new Uint16Array(rows), city: new Uint32Array(rows), services: new Uint32Array(rows),
  };
  const ipOut = new Uint32Array(rows);
  for (let r = 0; r < rows; r++) {
    const v = out[r];
    c.ip[r] = x.ip[v]; c.port[r] = x.port[v]; c.type[r] = x.type[v]; c.anon[r] = x.anon[v]; c.works[r] = x.works[v];
    c.ping[r] = x.ping[v]; c.checkedAt[r] = x.checkedAt[v]; c.country[r] = x.country[v]; c.city[r] = x.city[v];
    c.services[r] = x.services[v]; ipOut[r] = x.ipOut[v];
  }

  const byAddress = new Uint32Array(rows);
  const addrId = new Uint32Array(rows);
  // keptIdentity[0..rows) is ordered by ip, port, type.
  let addrCount = 0;
  for (let j = 0; j < rows; j++) {
    const r = (byAddress[j] = rowOf[keptIdentity[j]]);
    const p = j > 0 ? byAddress[j - 1] : -1;
    if (p < 0 || c.ip[p] !== c.ip[r] || c.port[p] !== c.port[r]) addrCount++;
    addrId[r] = addrCount - 1;
  }

  const ipLen = new Uint8Array(rows);
  const lines = byteStrings(rows, (r) => (ipLen[r] = ipv4Length(c.ip[r])) + 2 + uintLength(c.port[r]), (buf, pos, r) => {
    pos = writeIPv4(buf, pos, c.ip[r]);
    buf[pos++] = 58; // ':'
    pos = writeUint(buf, pos, c.port[r]);
    buf[pos] = 10;
    return pos + 1;
  });
  const ipOutText = byteStrings(rows, (r) => ipv4Length(ipOut[r]), (buf, pos, r) => writeIPv4(buf, pos, ipOut[r]));
  // Pings repeat a lot: format each whole-millisecond value once.
  const pingMemo = new Map<number, string>();
  const pingString = (ms: number): string => {
    let s = pingMemo.get(ms);
    if (s === undefined) pingMemo.set(ms, (s = String(ms / 1000)));
    return s;
  };
  const pingText = byteStrings(rows, (r) => pingString(c.ping[r]).length, (buf, pos, r) => writeAscii(buf, pos, pingString(c.ping[r])));

  // Rows are grouped by checked_at, so one formatted string serves a run.
  const timecheck = new Uint8Array(rows * 19);
  let lastT = -1;
  let lastText = '';
  for (let r = 0; r < rows; r++) {
    if (c.checkedAt[r] !== lastT) lastText = formatTimecheck((lastT = c.checkedAt[r]));
    writeAscii(timecheck, r * 19, lastText);
  }

  const typeBits = newFamily(TYPES.length, rows);
  const anonBits = newFamily(ANONS.length, rows);
  const countryBits = newFamily(countries.length, rows);
  const serviceBits = newFamily(services.length, rows);
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

  const cityCount = x.cities.length;
  const cityStart = new Uint32Array(cityCount + 1);
  for (let r = 0; r < rows; r++) cityStart[c.city[r] + 1]++;
  for (let k = 0; k < cityCount; k++) cityStart[k + 1] += cityStart[k];
  const cityRows = new Uint32Array(rows);
  const fill = cityStart.slice(0, cityCount);
  for (let r = 0; r < rows; r++) cityRows[fill[c.city[r]]++] = r;

  const columns: StoreColumns = {
    ...c, addrId, addrCount, byAddress, lines, ipLen, ipOut: ipOutText, pingText, timecheck,
    typeBits, anonBits, countryBits, serviceBits, cityStart, cityRows,
    cityJsonRu: packStrings(x.cities.map((k) => JSON.stringify(k.ru))),
    cityJsonEn: packStrings(x.cities.map((k) => JSON.stringify(k.en))),
  };
  const meta: StoreMeta = {
    generatedAt, services: [...services], countries, cities: x.cities,
    skipped: x.skipped, duplicates: m - rows, skipReasons: x.skipReasons,
  };
  return { columns, meta };
}
