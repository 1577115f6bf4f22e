import { ANONS, DEFAULT_SERVICES, TYPES, parseIPv4, recordProblem, type SnapshotFile, type SnapshotRecord } from '../snapshot/format.js';
import { formatTimecheck } from '../core/service-time.js';
import { newFamily, member, setBit } from './bitset.js';
import type { ByteStrings, StoreColumns, StoreMeta } from './columns.js';
import { ipv4Length, packStrings, uintLength, writeAscii, writeIPv4, writeUint } from './encode.js';
import { radixSortIndices, uint32Digits } from './radix-sort.js';

const MAX_SKIP_REASONS = 10;
const TYPE_CODE = new Map<string, number>(TYPES.map((t, i) => [t, i]));
const ANON_CODE = new Map<string, number>(ANONS.map((a, i) => [a, i]));

/** The valid records' fields, by valid-record index, before dedupe and ordering. */
interface Extracted {
  count: number;
  ip: Uint32Array;
  port: Uint16Array;
  type: Uint8Array;
  anon: Uint8Array;
  works: Uint8Array;
  ping: Float64Array;
  checkedAt: Uint32Array;
  country: Uint16Array;
  city: Uint32Array;
  services: Uint32Array;
  ipOut: Uint32Array;
  countries: string[];
  cities: Array<{ ru: string; en: string }>;
  skipped: number;
  skipReasons: string[];
}

function extract(proxies: readonly unknown[], services: readonly string[]): Extracted {
  const total = proxies.length;
  const serviceIndex = new Map(services.map((s, i) => [s, i]));
  const x: Extracted = {
    count: 0,
    ip: new Uint32Array(total), port: new Uint16Array(total), type: new Uint8Array(total), anon: new Uint8Array(total),
    works: new Uint8Array(total), ping: new Float64Array(total), checkedAt: new Uint32Array(total),
    country: new Uint16Array(total), city: new Uint32Array(total), services: new Uint32Array(total), ipOut: new Uint32Array(total),
    countries: [], cities: [{ ru: '', en: '' }], skipped: 0, skipReasons: [],
  };
  const countryIds = new Map<string, number>();
  const cityIds = new Map<string, number>([['\u0000', 0]]);
  for (let i = 0; i < total; i++) {
    const raw = proxies[i];
    const problem = recordProblem(raw, serviceIndex);
    if (problem !== null) {
      x.skipped++;
      if (x.skipReasons.length < MAX_SKIP_REASONS) x.skipReasons.push(`record ${i}: ${problem}`);
      continue;
    }
    const r = raw as SnapshotRecord;
    const m = x.count++;
    x.ip[m] = parseIPv4(r.ip);
    x.port[m] = r.port;
    x.type[m] = TYPE_CODE.get(r.type)!;
    x.anon[m] = ANON_CODE.get(r.anon)!;
    x.works[m] = r.works;
    x.ping[m] = Math.round(r.ping_ms);
    x.checkedAt[m] = r.checked_at;
    x.ipOut[m] = typeof r.ip_out === 'string' ? parseIPv4(r.ip_out) : x.ip[m];

    const country = r.country.toUpperCase();
    let countryId = countryIds.get(country);
    if (countryId === undefined) countryIds.set(country, (countryId = countryIds.size));
    x.country[m] = countryId;

    const ru = r.city?.ru ?? '';
    const en = r.city?.en ?? '';
    const cityKey = ru + '\u0000' + en;
    let cityId = cityIds.get(cityKey);
    if (cityId === undefined) {
      cityIds.set(cityKey, (cityId = x.cities.length));
      x.cities.push({ ru, en });
    }
    x.city[m] = cityId;

    let mask = 0;
    if (r.services) for (const s of r.services) mask |= 1 << serviceIndex.get(s)!;
    x.services[m] = mask >>> 0;
  }
  // Country ids in alphabetical order, so ids do not depend on record order.
  const byFirstSeen = [...countryIds.keys()];
  x.countries = [...byFirstSeen].sort();
  const remap = byFirstSeen.map((c) => x.countries.indexOf(c));
  for (let m = 0; m < x.count; m++) x.country[m] = remap[x.country[m]];
  return x;
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
export function buildStore(file: SnapshotFile): { columns: StoreColumns; meta: StoreMeta } {
  const services = file.services ?? DEFAULT_SERVICES;
  const x = extract(file.proxies, services);
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
  const kept: number[] = [];
  for (let j = 0; j < m; j++) {
    const v = identity[j];
    const prev = j > 0 ? identity[j - 1] : -1;
    if (prev >= 0 && x.ip[prev] === x.ip[v] && x.port[prev] === x.port[v] && x.type[prev] === x.type[v]) continue;
    kept.push(v);
  }
  const keptIdentity = Uint32Array.from(kept);
  const rows = keptIdentity.length;

  // Output order: checked_at desc, ping asc, ip, port, type.
  const pingDigits = uint32Digits(pingSortKey(x.ping, m), m, false);
  const out = radixSortIndices(keptIdentity.slice(), [typeDigits, portDigits, ...ipDigits, ...pingDigits, ...checkedDesc]);
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
  const pingStrings = Array.from(c.ping, (ms) => String(ms / 1000));
  const pingText = byteStrings(rows, (r) => pingStrings[r].length, (buf, pos, r) => writeAscii(buf, pos, pingStrings[r]));

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
  const countryBits = newFamily(x.countries.length, rows);
  const serviceBits = newFamily(services.length, rows);
  const typeSets = TYPES.map((_, i) => member(typeBits, i));
  const anonSets = ANONS.map((_, i) => member(anonBits, i));
  const countrySets = x.countries.map((_, i) => member(countryBits, i));
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
    generatedAt: file.generated_at, services: [...services], countries: x.countries, cities: x.cities,
    skipped: x.skipped, duplicates: m - rows, skipReasons: x.skipReasons,
  };
  return { columns, meta };
}
