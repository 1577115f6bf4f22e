import { Packr } from 'msgpackr';
import { SNAPSHOT_FORMAT, SNAPSHOT_VERSION, type SnapshotRecord } from './format.js';
import { formatIPv6 } from '../core/ipv6.js';
import { ANONS, DEFAULT_SERVICES, TYPES } from '../core/vocabulary.js';

/** Country → [weight, cities as [ru, en]]: roughly the mix of public proxy lists. */
const GEO: Array<[string, number, Array<[string, string]>]> = [
  ['US', 16, [['Нью-Йорк', 'New York'], ['Лос-Анджелес', 'Los Angeles'], ['Чикаго', 'Chicago'], ['Даллас', 'Dallas']]],
  ['RU', 12, [['Москва', 'Moscow'], ['Санкт-Петербург', 'Saint Petersburg'], ['Новосибирск', 'Novosibirsk'], ['Екатеринбург', 'Yekaterinburg']]],
  ['DE', 8, [['Франкфурт-на-Майне', 'Frankfurt am Main'], ['Берлин', 'Berlin'], ['Мюнхен', 'Munich']]],
  ['CN', 7, [['Пекин', 'Beijing'], ['Шанхай', 'Shanghai'], ['Гуанчжоу', 'Guangzhou']]],
  ['BR', 6, [['Сан-Паулу', 'São Paulo'], ['Рио-де-Жанейро', 'Rio de Janeiro']]],
  ['IN', 5, [['Мумбаи', 'Mumbai'], ['Дели', 'Delhi'], ['Бангалор', 'Bangalore']]],
  ['ID', 5, [['Джакарта', 'Jakarta'], ['Сурабая', 'Surabaya']]],
  ['UA', 4, [['Киев', 'Kyiv'], ['Харьков', 'Kharkiv'], ['Одесса', 'Odesa']]],
  ['FR', 4, [['Париж', 'Paris'], ['Марсель', 'Marseille']]],
  ['NL', 4, [['Амстердам', 'Amsterdam'], ['Роттердам', 'Rotterdam']]],
  ['GB', 4, [['Лондон', 'London'], ['Манчестер', 'Manchester']]],
  ['JP', 3, [['Токио', 'Tokyo'], ['Осака', 'Osaka']]],
  ['KR', 3, [['Сеул', 'Seoul']]],
  ['SG', 3, [['Сингапур', 'Singapore']]],
  ['TR', 3, [['Стамбул', 'Istanbul'], ['Анкара', 'Ankara']]],
  ['VN', 3, [['Ханой', 'Hanoi'], ['Хошимин', 'Ho Chi Minh City']]],
  ['TH', 2, [['Бангкок', 'Bangkok']]],
  ['PL', 2, [['Варшава', 'Warsaw'], ['Краков', 'Kraków']]],
  ['KZ', 2, [['Алматы', 'Almaty'], ['Астана', 'Astana']]],
  ['CA', 2, [['Торонто', 'Toronto'], ['Монреаль', 'Montreal']]],
  ['AR', 1, [['Буэнос-Айрес', 'Buenos Aires']]],
  ['MX', 1, [['Мехико', 'Mexico City']]],
  ['ZA', 1, [['Йоханнесбург', 'Johannesburg']]],
  ['EG', 1, [['Каир', 'Cairo']]],
  ['IR', 1, [['Тегеран', 'Tehran']]],
  ['BD', 1, [['Дакка', 'Dhaka']]],
];
/** The first 32 bits of IPv6 networks that proxies leave through: hosting and mobile ranges. */
const V6_NETWORKS = [[0x2a01, 0x4f8], [0x2001, 0x41d0], [0x2607, 0xf8b0], [0x2400, 0xcb00], [0x2a02, 0x6b8], [0x2a00, 0x1450]];
/**
 * Networks proxies leave through, as [AS number, organisation, hosting,
 * mobile]: data centres anywhere, and the home and mobile carriers of a
 * few countries. Some organisations hold a comma or a quote, as real ones do.
 */
type GeneratedNetwork = [number, string, boolean, boolean];
const HOSTING_NETWORKS: GeneratedNetwork[] = [
  [16509, 'Amazon.com, Inc.', true, false], [14061, 'DigitalOcean, LLC', true, false], [24940, 'Hetzner Online GmbH', true, false],
  [16276, 'OVH SAS', true, false], [13335, 'Cloudflare, Inc.', true, false], [396982, 'Google LLC', true, false], [63949, 'Akamai Connected Cloud', true, false],
];
const HOME_NETWORKS: Record<string, GeneratedNetwork[]> = {
  US: [[7922, 'Comcast Cable Communications, LLC', false, false], [21928, 'T-Mobile USA, Inc.', false, true]],
  RU: [[12389, 'PJSC "Rostelecom"', false, false], [8359, 'MTS PJSC', false, true]],
  DE: [[3320, 'Deutsche Telekom AG', false, false]],
  CN: [[4134, 'Chinanet', false, false], [9808, 'China Mobile Communications Group Co., Ltd.', false, true]],
  BR: [[28573, 'Claro NXT Telecomunicacoes Ltda', false, false]],
  IN: [[9829, 'National Internet Backbone', false, false], [45609, 'Bharti Airtel Ltd. AS for GPRS Service', false, true]],
  ID: [[7713, 'PT Telekomunikasi Indonesia', false, false]],
};
const PORTS = [80, 8080, 3128, 1080, 8888, 443, 8000, 9050, 4145, 1081, 8118, 999, 53281, 60000];
const SERVICE_SHARE = [0.15, 0.55, 0.35, 0.4, 0.5];

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface GenerateOptions {
  records: number;
  seed?: number;
  /** Unix seconds; `checked_at` spreads over the hour before it. */
  now?: number;
  /** The share of records that listen on IPv6 (default 0.05), and of the others that leave through IPv6 (default 0.2). */
  ipv6Entries?: number;
  ipv6Exits?: number;
}

/** A realistic synthetic snapshot; the same options give the same records. */
export function generateRecords(o: GenerateOptions): SnapshotRecord[] {
  const rand = prng(o.seed ?? 1);
  const now = o.now ?? Math.floor(Date.now() / 1000);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const weighted = <T>(items: readonly T[], weights: readonly number[]): T => {
    let x = rand() * weights.reduce((a, b) => a + b, 0);
    for (let i = 0; i < items.length; i++) if ((x -= weights[i]) < 0) return items[i];
    return items[items.length - 1];
  };
  const randomIp = (): string => `${1 + Math.floor(rand() * 222)}.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}.${1 + Math.floor(rand() * 254)}`;
  const group = (): number => Math.floor(rand() * 65536);
  // An address of a /64 of one of the networks, in the forms checkers write: mostly RFC 5952's, some upper case or written in full.
  const randomIpv6 = (): string => {
    const groups = [...pick(V6_NETWORKS), group(), group() & 0xff, 0, 0, rand() < 0.5 ? group() : 0, 1 + Math.floor(rand() * 65535)];
    const form = rand();
    const text = formatIPv6(groups);
    return form < 0.1 ? text.toUpperCase() : form < 0.15 ? groups.map((g) => g.toString(16).padStart(4, '0')).join(':') : text;
  };
  // The networks come from a stream of their own: the other fields are what they were before networks existed.
  const netRand = prng((o.seed ?? 1) ^ 0x5bd1e995);
  /** Who runs the exit: most records say, some give only the AS number, some nothing (docs/snapshot.md). */
  const network = (record: SnapshotRecord, country: string): void => {
    const x = netRand();
    if (x < 0.15) return;
    const home = HOME_NETWORKS[country];
    const [asn, org, hosting, mobile] = home && netRand() < 0.6 ? home[Math.floor(netRand() * home.length)] : HOSTING_NETWORKS[Math.floor(netRand() * HOSTING_NETWORKS.length)];
    record.asn = asn;
    if (x >= 0.25) record.org = org;
    if (netRand() < 0.7) record.hosting = hosting;
    if (netRand() < 0.5) record.mobile = mobile;
  };
  const v6Entries = o.ipv6Entries ?? 0.05;
  const v6Exits = o.ipv6Exits ?? 0.2;
  const geoWeights = GEO.map((g) => g[1]);
  const records: SnapshotRecord[] = [];
  while (records.length < o.records) {
    const [country, , cities] = weighted(GEO, geoWeights);
    const [ru, en] = pick(cities);
    const cityShape = rand();
    const record: SnapshotRecord = {
      ip: rand() < v6Entries ? randomIpv6() : randomIp(),
      port: rand() < 0.8 ? pick(PORTS) : 1024 + Math.floor(rand() * 64000),
      type: weighted(TYPES, [40, 20, 15, 25]),
      anon: weighted(ANONS, [30, 30, 40]),
      ping_ms: Math.round((30 + Math.exp(rand() * 8.5)) * 100) / 100,
      checked_at: now - Math.floor(rand() * 3600),
      country: rand() < 0.9 ? country : country.toLowerCase(),
      works: Math.min(100, Math.floor(Math.sqrt(rand()) * 101)),
      services: DEFAULT_SERVICES.filter((_, i) => rand() < SERVICE_SHARE[i]),
    };
    if (cityShape < 0.85) record.city = { ru, en };
    else if (cityShape < 0.9) record.city = { en };
    else if (cityShape < 0.93) record.city = { ru };
    // Some leave through an IPv6 exit, and a third of the others through another IPv4 address (the rest from their entry).
    const exit = rand();
    if (exit < v6Exits) record.ip_out = randomIpv6();
    else if (exit < v6Exits + (1 - v6Exits) * 0.3) record.ip_out = randomIp();
    network(record, country);
    records.push(record);
    // One address often serves several protocols, and checkers repeat themselves.
    if (rand() < 0.1 && records.length < o.records) {
      records.push({ ...record, type: TYPES[(TYPES.indexOf(record.type as never) + 1 + Math.floor(rand() * 3)) % 4], checked_at: now - Math.floor(rand() * 3600) });
    }
    if (rand() < 0.005 && records.length < o.records) records.push({ ...record, checked_at: record.checked_at - 1 - Math.floor(rand() * 600) });
  }
  return records;
}

export function encodeSnapshot(records: readonly unknown[], generatedAt: number, services?: string[]): Uint8Array {
  const doc: Record<string, unknown> = { format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, generated_at: generatedAt };
  if (services) doc.services = services;
  doc.proxies = records;
  return new Packr({ useRecords: false }).pack(doc);
}

export function generateSnapshot(o: GenerateOptions): Uint8Array {
  const now = o.now ?? Math.floor(Date.now() / 1000);
  return encodeSnapshot(generateRecords({ ...o, now }), now);
}

export interface EvolveOptions {
  seed: number;
  /** The share of records that change: a third are dropped, a third get new values, and as many new ones as a third are added. */
  share: number;
  /** Unix seconds of the new snapshot: changed and added records were checked within the ten minutes before it. */
  now: number;
}

/**
 * The next snapshot's records, as a checker's next run would write them:
 * most records as they were, some dropped, some checked again with new
 * values (one or several fields each), some new.
 */
export function evolveRecords(records: readonly SnapshotRecord[], o: EvolveOptions): SnapshotRecord[] {
  const rand = prng(o.seed);
  const fresh = generateRecords({ records: Math.ceil((records.length * o.share) / 3), seed: o.seed + 1, now: o.now });
  const out: SnapshotRecord[] = [];
  for (const r of records) {
    const x = rand();
    if (x >= (o.share * 2) / 3) out.push(r);
    else if (x < o.share / 3) continue;
    else {
      const next: SnapshotRecord = { ...r, checked_at: o.now - Math.floor(rand() * 600) };
      const y = rand();
      if (y < 0.3) next.ping_ms = Math.round((30 + Math.exp(rand() * 8.5)) * 100) / 100;
      else if (y < 0.45) next.works = Math.floor(rand() * 101);
      else if (y < 0.55) next.anon = ANONS[Math.floor(rand() * ANONS.length)];
      else if (y < 0.65) next.services = DEFAULT_SERVICES.filter(() => rand() < 0.5);
      else if (y < 0.85) {
        // A proxy that moves changes its place as a whole: country, city and the network it leaves through.
        const other = fresh[Math.floor(rand() * fresh.length)];
        next.country = other.country;
        next.city = other.city;
        for (const key of ['asn', 'org', 'hosting', 'mobile'] as const) {
          if (other[key] === undefined) delete next[key];
          else (next as unknown as Record<string, unknown>)[key] = other[key];
        }
      } else if (y < 0.9) next.ip_out = `${1 + Math.floor(rand() * 222)}.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}.${1 + Math.floor(rand() * 254)}`;
      else if (y < 0.95) next.hosting = !(next.hosting ?? false);
      out.push(next);
    }
  }
  return [...out, ...fresh];
}
