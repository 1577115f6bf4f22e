import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CodedError } from '../core/errors.js';
import { parseIPv6Bytes } from '../core/ipv6.js';
import { MAX_ASN, parseIPv4Bytes } from '../core/vocabulary.js';

/**
 * An IP-to-ASN database (docs/snapshot.md, Who runs the exit): the
 * autonomous system and the organisation of an exit address. Held as range
 * tables in shared memory, never an object per range: IPv4 ranges as their
 * first and last addresses, IPv6 ranges as four words each, and per range
 * its network, an AS number and an organisation, each pair once. Plain data,
 * so that one process reads the database once and hands it to every build
 * thread (snapshot/build-thread.ts).
 */
export interface AsnTables {
  /** What /health names: the database, and the day it was built (YYYY-MM-DD) or null. */
  name: string;
  date: string | null;
  v4: RangeTable;
  v6: RangeTable;
  /** Per network: its AS number, and its organisation as UTF-8 bytes[off[k] .. off[k + 1]). */
  asns: Uint32Array;
  orgBytes: Uint8Array;
  orgOff: Uint32Array;
}

/** Ranges sorted by first address, `width` words an address. */
interface RangeTable {
  starts: Uint32Array;
  ends: Uint32Array;
  nets: Uint32Array;
}

/** The npm package that ships the default database (RouteViews and DB-IP data, CC BY 4.0; the README credits it). */
export const DEFAULT_ASN_PACKAGE = '@ip-location-db/asn';

/** Networks (AS number, organisation) by first sight; an organisation is copied once for each AS number it runs. */
class NetworkInterner {
  readonly asns: number[] = [];
  readonly orgs: Uint8Array[] = [];
  private readonly byAsn = new Map<number, number[]>();

  /** The network of `asn` run by the organisation bytes b[from..to). */
  id(asn: number, b: Uint8Array, from: number, to: number): number {
    let ids = this.byAsn.get(asn);
    if (!ids) this.byAsn.set(asn, (ids = []));
    for (const id of ids) if (sameBytes(this.orgs[id], b, from, to)) return id;
    const id = this.asns.length;
    ids.push(id);
    this.asns.push(asn);
    this.orgs.push(b.slice(from, to));
    return id;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array, from: number, to: number): boolean {
  if (a.length !== to - from) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[from + i]) return false;
  return true;
}

/**
 * The field readField read last (RFC 4180): fieldBytes[fieldFrom..fieldTo),
 * a quoted one without its quotes; one that doubles a quote is unescaped
 * into bytes of its own.
 */
let fieldFrom = 0;
let fieldTo = 0;
let fieldBytes: Uint8Array = new Uint8Array(0);

/** Reads the field at `at` (before `end`) into fieldBytes[fieldFrom..fieldTo); returns where the next one starts. */
function readField(b: Uint8Array, at: number, end: number): number {
  fieldBytes = b;
  if (b[at] !== 34) {
    let e = at;
    while (e < end && b[e] !== 44) e++;
    fieldFrom = at;
    fieldTo = e;
    return e + 1;
  }
  let q = at + 1;
  while (q < end && !(b[q] === 34 && b[q + 1] !== 34)) q += b[q] === 34 ? 2 : 1;
  const raw = b.subarray(at + 1, q);
  if (raw.indexOf(34) < 0) {
    fieldFrom = at + 1;
    fieldTo = q;
  } else {
    fieldBytes = Buffer.from(Buffer.from(raw).toString('latin1').replace(/""/g, '"'), 'latin1');
    fieldFrom = 0;
    fieldTo = fieldBytes.length;
  }
  return q + 2;
}

/**
 * Reads a CSV file of the package (`first,last,asn,organisation`, addresses
 * as text) into a range table, written in place in shared memory laid out
 * for the file's lines: `words` writes the address of range k as its words
 * at `into[k * width ..]` (one for IPv4, four for IPv6) and says whether it
 * is one. The package's files come sorted by first address; one that is
 * not is refused rather than sorted.
 */
function readRanges(path: string, width: number, networks: NetworkInterner, words: (b: Uint8Array, start: number, len: number, into: Uint32Array, k: number) => boolean): RangeTable {
  const b = readFileSync(path);
  let lines = 1;
  for (let at = b.indexOf(10); at >= 0; at = b.indexOf(10, at + 1)) lines++;
  const starts = sharedWords(lines * width);
  const ends = sharedWords(lines * width);
  const nets = sharedWords(lines);
  let k = 0;
  let lineNo = 0;
  for (let from = 0; from < b.length; ) {
    let end = b.indexOf(10, from);
    if (end < 0) end = b.length;
    const next = end + 1;
    if (end > from && b[end - 1] === 13) end--;
    lineNo++;
    if (end > from) {
      let at = readField(b, from, end);
      let ok = words(b, fieldFrom, fieldTo - fieldFrom, starts, k);
      at = readField(b, at, end);
      ok = ok && words(b, fieldFrom, fieldTo - fieldFrom, ends, k);
      at = readField(b, at, end);
      let asn = fieldTo > fieldFrom && fieldTo - fieldFrom <= 10 ? 0 : -1;
      for (let i = fieldFrom; i < fieldTo && asn >= 0; i++) asn = b[i] >= 48 && b[i] <= 57 ? asn * 10 + b[i] - 48 : -1;
      if (!ok || asn < 0 || asn > MAX_ASN) throw new CodedError('E_USAGE', `--asn-db: ${path} line ${lineNo} is not first,last,asn,organisation`);
      if (k > 0 && compareAt(starts, k - 1, starts, k, width) > 0) throw new CodedError('E_USAGE', `--asn-db: ${path} line ${lineNo} is out of order`);
      if (at <= end) readField(b, at, end);
      else fieldFrom = fieldTo = 0;
      // AS number 0 marks space no network announces: as if no range held it.
      if (asn !== 0) nets[k++] = networks.id(asn, fieldBytes, fieldFrom, fieldTo);
    }
    from = next;
  }
  return { starts: starts.subarray(0, k * width), ends: ends.subarray(0, k * width), nets: nets.subarray(0, k) };
}

/** Zeroed 32-bit words in shared memory. */
const sharedWords = (n: number): Uint32Array => new Uint32Array(new SharedArrayBuffer(Math.max(4, n * 4)), 0, n);

/** The order of address i of `a` and address j of `b`, `width` words each: negative, 0 or positive. */
function compareAt(a: Uint32Array, i: number, b: Uint32Array, j: number, width: number): number {
  for (let w = 0; w < width; w++) {
    const d = a[i * width + w] - b[j * width + w];
    if (d !== 0) return d;
  }
  return 0;
}

const v4Words = (b: Uint8Array, start: number, len: number, into: Uint32Array, k: number): boolean => {
  const ip = parseIPv4Bytes(b, start, len);
  into[k] = ip;
  return ip >= 0;
};

const groups = new Uint16Array(8);
const v6Words = (b: Uint8Array, start: number, len: number, into: Uint32Array, k: number): boolean => {
  if (!parseIPv6Bytes(b, start, len, groups)) return false;
  for (let w = 0; w < 4; w++) into[k * 4 + w] = groups[w * 2] * 65536 + groups[w * 2 + 1];
  return true;
};

/** The version of the package, `2.3.2026061719`, holds the day it was built. */
function packageDate(version: string): string | null {
  const m = /\.(\d{4})(\d{2})(\d{2})\d*$/.exec(version);
  return m ? `${m[1]}-${m[2]}-${m[3]}` : null;
}

/** The default database: the CSV files of DEFAULT_ASN_PACKAGE, where npm installed it. */
export function readDefaultAsnTables(): AsnTables {
  let dir: string;
  let version: string;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${DEFAULT_ASN_PACKAGE}/package.json`);
    dir = dirname(manifest);
    version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  } catch {
    throw new CodedError('E_USAGE', `--asn-db: the default database (${DEFAULT_ASN_PACKAGE}) is not installed: npm install it, or give --asn-db none`);
  }
  const networks = new NetworkInterner();
  const v4 = readRanges(join(dir, 'asn-ipv4.csv'), 1, networks, v4Words);
  const v6 = readRanges(join(dir, 'asn-ipv6.csv'), 4, networks, v6Words);
  const orgOff = new Uint32Array(new SharedArrayBuffer((networks.orgs.length + 1) * 4));
  networks.orgs.forEach((o, k) => (orgOff[k + 1] = orgOff[k] + o.length));
  const orgBytes = new Uint8Array(new SharedArrayBuffer(Math.max(1, orgOff[networks.orgs.length])));
  networks.orgs.forEach((o, k) => orgBytes.set(o, orgOff[k]));
  const asns = sharedWords(networks.asns.length);
  asns.set(networks.asns);
  return { name: `${DEFAULT_ASN_PACKAGE} ${version}`, date: packageDate(version), v4, v6, asns, orgBytes, orgOff };
}

/**
 * Where the build looks up who runs an exit: the network of an address
 * (-1 for none), and each network's AS number and organisation.
 */
export interface ExitNetworks {
  /** What /health names: the database, and the day it was built (YYYY-MM-DD) or null. */
  readonly name: string;
  readonly date: string | null;
  v4(ip: number): number;
  /** By the address's eight groups. */
  v6(groups: ArrayLike<number>): number;
  asn(network: number): number;
  org(network: number): string;
}

/** Lookups in a database's tables, on the thread that builds stores. */
export class AsnLookup implements ExitNetworks {
  private readonly probe = new Uint32Array(4);
  private readonly orgs: Array<string | undefined> = [];
  readonly name: string;
  readonly date: string | null;

  constructor(readonly tables: AsnTables) {
    this.name = tables.name;
    this.date = tables.date;
  }

  /** The network of an IPv4 address (as its number), or -1 when no range holds it. */
  v4(ip: number): number {
    this.probe[0] = ip;
    return find(this.tables.v4, this.probe, 1);
  }

  /** The network of an IPv6 address (its eight groups), or -1. */
  v6(g: ArrayLike<number>): number {
    for (let w = 0; w < 4; w++) this.probe[w] = g[w * 2] * 65536 + g[w * 2 + 1];
    return find(this.tables.v6, this.probe, 4);
  }

  asn(network: number): number {
    return this.tables.asns[network];
  }

  /** The organisation of a network ('' unknown), decoded once. */
  org(network: number): string {
    const t = this.tables;
    return (this.orgs[network] ??= Buffer.from(t.orgBytes.buffer, t.orgBytes.byteOffset, t.orgBytes.length).toString('utf8', t.orgOff[network], t.orgOff[network + 1]));
  }
}

/** The network of the range of `t` that holds the address `at`: the last range starting at or before it, if it ends at or after it; else -1. */
function find(t: RangeTable, at: Uint32Array, width: number): number {
  let lo = 0;
  let hi = t.nets.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareAt(t.starts, mid, at, 0, width) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && compareAt(t.ends, lo - 1, at, 0, width) >= 0 ? t.nets[lo - 1] : -1;
}
