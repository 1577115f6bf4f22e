import type { SnapshotRecord } from '../../src/snapshot/format.js';

/** A seeded PRNG, so a failing query can be reproduced from the seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TYPES = ['http', 'https', 'socks4', 'socks5'];
const ANONS = ['transparent', 'anonymous', 'elite'];
const FIELDS = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works', 'smtp', 'telegram', 'avito', 'google', 'the service'];

/**
 * Valid /api query strings (without the key) spanning every parameter: lists
 * with odd case, spaces, repeats and duplicates; cm and country_mode; cities in
 * both languages; every output and JSON option; CSV; ip in both families,
 * and ipv; the exit network's asn, hosting and mobile; count; no-match cases.
 */
export function randomQueries(records: readonly SnapshotRecord[], n: number, seed: number): string[] {
  const rand = seeded(seed);
  const chance = (p: number): boolean => rand() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const some = <T>(items: readonly T[], max: number): T[] => Array.from({ length: 1 + Math.floor(rand() * max) }, () => pick(items));
  const oddCase = (s: string): string => (chance(0.3) ? s.toUpperCase() : chance(0.3) ? s[0].toUpperCase() + s.slice(1) : s);
  const enc = (s: string): string => (chance(0.5) ? encodeURIComponent(s) : encodeURIComponent(s).replace(/%20/g, '+'));
  const listParam = (name: string, items: string[]): string[] => {
    const spaced = items.map((i) => (chance(0.2) ? ` ${i} ` : i));
    if (spaced.length > 1 && chance(0.25)) return spaced.map((i) => `${name}=${enc(i)}`); // repeated parameter
    return [`${name}=${spaced.map(enc).join(chance(0.1) ? ',,' : ',')}`];
  };
  // An address as a client gives it: IPv4 bare or with its port; IPv6 in the snapshot's text form or upper case, bare or bracketed with its port.
  const ipItem = (r: SnapshotRecord): string => {
    if (!r.ip.includes(':')) return chance(0.5) ? r.ip : `${r.ip}:${r.port}`;
    const text = chance(0.3) ? r.ip.toUpperCase() : r.ip;
    return chance(0.5) ? text : `[${text}]:${r.port}`;
  };
  const cities = [...new Set(records.flatMap((r) => [r.city?.ru, r.city?.en]).filter((c): c is string => !!c))];
  const countries = [...new Set(records.map((r) => r.country.toUpperCase()))];

  // The exit network's filters draw from a stream of their own: the rest of each query is what it was before they existed.
  const netRand = seeded(seed ^ 0x2545f491);
  const asns = [...new Set(records.map((r) => r.asn).filter((a): a is number => !!a))];
  const networkParams = (): string[] => {
    const parts: string[] = [];
    if (netRand() < 0.12 && asns.length > 0) {
      const items = Array.from({ length: 1 + Math.floor(netRand() * 3) }, () => (netRand() < 0.15 ? 64511 : asns[Math.floor(netRand() * asns.length)]));
      parts.push(`asn=${items.map((a) => (netRand() < 0.3 ? `${netRand() < 0.5 ? 'AS' : 'as'}${a}` : String(a))).join(',')}`);
    }
    if (netRand() < 0.1) parts.push(`hosting=${netRand() < 0.5 ? 0 : 1}`);
    if (netRand() < 0.1) parts.push(`mobile=${netRand() < 0.5 ? 0 : 1}`);
    // Fields a list merges with any other `fields` of the query (JSON only; the other outputs ignore it).
    if (netRand() < 0.2) {
      const named = ['asn', 'org', 'hosting', 'mobile', 'ip', 'works', 'ORG', 'Asn'].filter(() => netRand() < 0.4);
      if (named.length > 0) parts.push(`fields=${named.join(',')}`);
    }
    return parts;
  };

  // CSV draws from a stream of its own too: some JSON lists become CSV, keeping JSON's parameters, which CSV reads or ignores.
  const csvRand = seeded(seed ^ 0x5bd1e995);
  const asCsv = (parts: string[]): string[] => {
    const at = parts.findIndex((p) => /^get=json/i.test(p));
    if (at < 0 || csvRand() >= 0.4) return parts;
    const out = [...parts];
    out[at] = `get=${['csv', 'CSV', 'csv.file'][Math.floor(csvRand() * 3)]}`;
    if (csvRand() < 0.2) out.push(['format=table', 'wrap=2', 'pretty=x', 'type_prefix=x'][Math.floor(csvRand() * 4)]);
    return out;
  };

  const queries: string[] = [];
  for (let q = 0; q < n; q++) {
    const parts: string[] = [];
    if (chance(0.35)) parts.push(...listParam('type', some(TYPES, 3).map(oddCase)));
    if (chance(0.25)) parts.push(...listParam('anon', some(ANONS, 2).map(oddCase)));
    if (chance(0.15)) parts.push(...listParam('port', some([...some(records, 2).map((r) => String(r.port)), '80', '8080', '3128', '1080', '65535'], 3).map((p) => (chance(0.1) ? `0${p}` : p))));
    if (chance(0.2)) parts.push(`ping=${chance(0.1) ? '0' : ''}${pick([1, 50, 120, 300, 800, 2500, 10000])}`);
    if (chance(0.4)) parts.push(`time=${pick([1, 30, 60, 300, 600, 1200, 3600, 7200, 99999])}`);
    if (chance(0.2)) parts.push(`works=${pick([0, 10, 50, 75, 90, 100])}`);
    if (chance(0.35)) {
      const codes = some([...countries, 'ZZ'], 3).map((c) => (chance(0.4) ? c.toLowerCase() : c));
      parts.push(...listParam('country', codes));
      const mode = pick(['include', 'except', 'INCLUDE', 'Except']);
      const r = rand();
      if (r < 0.3) parts.push(`cm=${mode}`);
      else if (r < 0.5) parts.push(`country_mode=${mode}`);
      else if (r < 0.6) parts.push(`cm=${mode}`, `country_mode=${mode.toLowerCase()}`);
    }
    if (chance(0.15)) parts.push(...listParam('city', some([...cities, 'Атлантида'], 2).map((c) => (chance(0.3) ? c.toUpperCase() : c))));
    if (chance(0.15)) parts.push(...listParam('ipv', some(['4', '6'], 2)));
    if (chance(0.25)) parts.push(...listParam('service', some(['smtp', 'telegram', 'avito', 'google', 'the service'], 2).map(oddCase)));
    if (chance(0.3)) parts.push(`sort=${oddCase(pick(['time', 'ping', 'works', 'ping', 'works']))}`);
    if (chance(0.25)) parts.push(`offset=${pick(['0', '1', '3', '10', '100', '5000', '00'])}`);
    if (chance(0.5)) parts.push(`count=${chance(0.1) ? '00' : ''}${pick([1, 2, 5, 10, 50, 100, 500, 100000])}`);
    if (chance(0.4)) parts.push(`lang=${pick(['ru', 'en', 'EN'])}`);
    const get = pick(['txt', 'json', 'json', 'txt.file', 'json.file', 'JSON', 'stats', 'Stats']);
    if (get !== 'txt' || chance(0.5)) parts.push(`get=${get}`);
    if (get.toLowerCase() === 'stats') {
      // The list-shaping parameters are ignored, and not validated.
      if (chance(0.2)) parts.push(pick(['format=table', 'wrap=2', 'fields=nope', 'lang=de', 'type_prefix=x', 'split_ip=9', 'sort=fast', 'offset=-1']));
      if (chance(0.5)) parts.push(`pretty=${pick(['0', '1'])}`);
      if (chance(0.2)) parts.push(...listParam('ip', some(records, 3).map(ipItem)));
    } else if (get.toLowerCase().startsWith('txt')) {
      if (chance(0.4)) parts.push(`type_prefix=${pick(['0', '1'])}`);
    } else {
      if (chance(0.35)) parts.push(...listParam('fields', some(FIELDS, 5).map(oddCase)));
      if (chance(0.4)) parts.push(`split_ip=${pick(['0', '1'])}`);
      if (chance(0.4)) parts.push(`format=${pick(['array', 'object', 'OBJECT'])}`);
      if (chance(0.3)) parts.push(`wrap=${pick(['0', '1'])}`);
      if (chance(0.5)) parts.push(`pretty=${pick(['0', '1'])}`);
      if (chance(0.15)) {
        const ips = some(records, 3).map(ipItem);
        parts.push(...listParam('ip', chance(0.2) ? [...ips, '10.255.255.1', '2001:db8::dead'] : ips));
      }
    }
    if (chance(0.1)) parts.push(`_=${Math.floor(rand() * 1e9)}`);
    // Parameter order does not matter: shuffle.
    for (let i = parts.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [parts[i], parts[j]] = [parts[j], parts[i]];
    }
    for (const param of networkParams()) parts.splice(Math.floor(netRand() * (parts.length + 1)), 0, param);
    queries.push(asCsv(parts).join('&'));
  }
  return queries;
}
