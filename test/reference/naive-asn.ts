/**
 * The reference's own reading of the default IP-to-ASN database (the CSV
 * files of @ip-location-db/asn): each line split by a regular expression,
 * IPv4 addresses as numbers and IPv6 ones as BigInts, a binary search over
 * the ranges of the address's family. It shares nothing with the service's
 * range tables (src/snapshot/asn-database.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isIPv4 } from 'node:net';

/** One family's ranges, sorted by first address: parallel arrays, so a test process holding them stays small. */
interface Family<T> {
  first: T[];
  last: T[];
  asn: number[];
  org: string[];
}

const v4Number = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);

function v6Number(ip: string): bigint {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n);
}

const LINE = /^([^,]*),([^,]*),(\d+),(?:"((?:[^"]|"")*)"|(.*))$/;

function readFamily<T>(file: string, toNumber: (ip: string) => T): Family<T> {
  const f: Family<T> = { first: [], last: [], asn: [], org: [] };
  const orgs = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    if (line === '') continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a database line: ${line}`);
    if (m[3] === '0') continue;
    const org = m[4] !== undefined ? m[4].replace(/""/g, '"') : m[5];
    f.first.push(toNumber(m[1]));
    f.last.push(toNumber(m[2]));
    f.asn.push(Number(m[3]));
    f.org.push(orgs.get(org) ?? (orgs.set(org, org), org));
  }
  return f;
}

let db: { v4: Family<number>; v6: Family<bigint> } | null = null;

function search<T>(f: Family<T>, n: T): { asn: number; org: string } | null {
  let lo = 0;
  let hi = f.first.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (f.first[mid] <= n) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && f.last[lo - 1] >= n ? { asn: f.asn[lo - 1], org: f.org[lo - 1] } : null;
}

/** The AS number and organisation of the range that holds `ip` (as canonicalIp writes it), or null. */
export function lookUpAsn(ip: string): { asn: number; org: string } | null {
  if (!db) {
    const dir = dirname(createRequire(import.meta.url).resolve('@ip-location-db/asn/package.json'));
    db = { v4: readFamily(join(dir, 'asn-ipv4.csv'), v4Number), v6: readFamily(join(dir, 'asn-ipv6.csv'), v6Number) };
  }
  return isIPv4(ip) ? search(db.v4, v4Number(ip)) : search(db.v6, v6Number(ip));
}
