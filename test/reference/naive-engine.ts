/**
 * The naive reference: the API as a capable developer would write it in an
 * afternoon. Plain objects, Array.filter, a comparator sort, JSON.stringify,
 * lines joined. It shares no query, store or render code with the service;
 * only the per-record validity rule is reused, because it is not what is
 * compared. It answers valid queries; error texts are tested elsewhere.
 */
import { unpack } from 'msgpackr';
import type { SnapshotRecord } from '../../src/snapshot/format.js';
import { lookUpAsn } from './naive-asn.js';
import { recordProblem } from './naive-validity.js';

const TYPES = ['http', 'https', 'socks4', 'socks5'];
const DEFAULT_SERVICES = ['smtp', 'telegram', 'avito', 'google', 'the service'];

export interface NaiveAnswer {
  status: number;
  contentType: string;
  disposition: string | null;
  body: string;
}

const isV6 = (ip: string): boolean => ip.includes(':');
/** An address's value for the order: IPv4 below every IPv6 (docs/api.md, IPv6); `ip` in the form canonicalIp gives. */
function ipValue(ip: string): bigint {
  if (!isV6(ip)) return BigInt(ip.split('.').reduce((n, o) => n * 256 + Number(o), 0));
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 1n);
}
/**
 * An address as the service writes it: IPv4 as it is, IPv6 in RFC 5952's
 * form (the URL parser serializes it so), an IPv4-mapped IPv6 as its IPv4.
 */
export function canonicalIp(ip: string): string {
  if (!isV6(ip)) return ip;
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped) return host;
  const hi = parseInt(mapped[1], 16);
  const lo = parseInt(mapped[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}
/** The address part of `ip:port`: IPv6 in brackets. */
const host = (ip: string): string => (isV6(ip) ? `[${ip}]` : ip);
/** A record's `ip:port`, as an `ip` filter item too: an IPv6 address bracketed. */
export const addressOf = (r: SnapshotRecord): string => `${host(r.ip)}:${r.port}`;
/** What an `ip` filter item names: an address (as canonicalIp writes it) and a port, or any port (null). */
function parseItem(item: string): { ip: string; port: number | null } {
  const bracketed = /^\[(.*)\]:(\d+)$/.exec(item);
  if (bracketed) return { ip: canonicalIp(bracketed[1]), port: Number(bracketed[2]) };
  if (item.split(':').length > 2) return { ip: canonicalIp(item), port: null };
  const [ip, port] = item.split(':');
  return { ip, port: port === undefined ? null : Number(port) };
}
/**
 * Whether a record is at one of the `ip` filter's items, by value. The items
 * are read at the first record asked about: an output that ignores `ip`
 * (txt) never reads them, and they need not be valid there.
 */
function atItems(items: readonly string[] | null): (r: SnapshotRecord) => boolean {
  let parsed: Array<ReturnType<typeof parseItem>> | null = null;
  return (r) => {
    if (items === null) return true;
    parsed ??= items.map(parseItem);
    return parsed.some((m) => m.ip === r.ip && (m.port === null || m.port === r.port));
  };
}
/** An `asn` filter item, `13335` or `AS13335` in any case, as its number. */
const asnOf = (item: string): number => Number(item.replace(/^as/i, ''));
const norm = (s: string): string => s.trim().normalize('NFC').toLowerCase();
/** A record's key in a change set. */
export const keyOf = (r: SnapshotRecord): string => `${r.type}://${host(r.ip)}:${r.port}`;
/** What a record shows, in any output: equal texts are the same record. */
const visible = (r: SnapshotRecord, services: readonly string[]): string =>
  JSON.stringify([r.anon, Math.round(r.ping_ms), r.checked_at, r.country.toUpperCase(), r.city?.ru ?? '', r.city?.en ?? '', r.ip_out ?? r.ip, r.works, services.filter((s) => (r.services ?? []).includes(s)), r.asn ?? null, r.org || '', r.hosting ?? null, r.mobile ?? null]);
const CSV_TYPE = 'text/csv; charset=utf-8; header=present';
/** A CSV cell: unknown empty, booleans and numbers as JSON writes them, a text with a comma, quote, CR or LF quoted with its quotes doubled. */
function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const text = String(v);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
const timecheck = (unixS: number): string => new Date((unixS + 7200) * 1000).toISOString().slice(0, 19).replace('T', ' ');

/**
 * A record with what the database says of its exit where the checker is
 * silent: an unknown AS number, and the organisation when unknown and the
 * AS numbers agree. The checker's values always win.
 */
function withDatabaseNetwork(r: SnapshotRecord): SnapshotRecord {
  if (r.asn && r.org) return r;
  const found = lookUpAsn(r.ip_out ?? r.ip);
  if (!found || (r.asn && r.asn !== found.asn)) return r;
  return { ...r, asn: r.asn || found.asn, org: r.org || found.org };
}

export class NaiveEngine {
  readonly services: string[];
  readonly records: SnapshotRecord[];

  /** `asnDb`: look up the exit network the checker does not give in the default database, as the server does unless told otherwise. */
  constructor(snapshot: { services?: string[]; proxies: unknown[] }, options: { asnDb?: boolean } = {}) {
    this.services = snapshot.services ?? DEFAULT_SERVICES;
    const valid = (snapshot.proxies.filter((r) => recordProblem(r, this.services) === null) as SnapshotRecord[])
      .map((r) => ({ ...r, ip: canonicalIp(r.ip), ...(typeof r.ip_out === 'string' ? { ip_out: canonicalIp(r.ip_out) } : {}) }))
      .map((r) => (options.asnDb === false ? r : withDatabaseNetwork(r)));
    const byIdentity = new Map<string, SnapshotRecord>();
    for (const r of valid) {
      const id = `${r.ip}:${r.port}/${r.type}`;
      const seen = byIdentity.get(id);
      if (!seen || r.checked_at >= seen.checked_at) byIdentity.set(id, r);
    }
    const values = new Map(valid.map((r) => [r.ip, ipValue(r.ip)]));
    const order = (a: SnapshotRecord, b: SnapshotRecord): number => (values.get(a.ip)! < values.get(b.ip)! ? -1 : values.get(a.ip)! > values.get(b.ip)! ? 1 : 0);
    this.records = [...byIdentity.values()].sort(
      (a, b) =>
        b.checked_at - a.checked_at ||
        Math.round(a.ping_ms) - Math.round(b.ping_ms) ||
        order(a, b) ||
        a.port - b.port ||
        TYPES.indexOf(a.type) - TYPES.indexOf(b.type),
    );
  }

  static fromFile(bytes: Uint8Array, options: { asnDb?: boolean } = {}): NaiveEngine {
    return new NaiveEngine(unpack(bytes), options);
  }

  answer(query: string, nowMs: number): NaiveAnswer {
    const params = new URLSearchParams(query);
    const one = (name: string): string | null => params.getAll(name).find((v) => v !== '') ?? null;
    const list = (name: string): string[] | null => {
      const items = params.getAll(name).join(',').split(',').map((s) => s.trim()).filter((s) => s !== '');
      return items.length ? items : null;
    };
    const unique = <T>(items: T[]): T[] => items.filter((x, i) => items.indexOf(x) === i);

    const types = list('type') && unique(list('type')!.map((t) => t.toLowerCase()));
    const anons = list('anon') && unique(list('anon')!.map((t) => t.toLowerCase()));
    const ports = list('port') && unique(list('port')!.map(Number));
    const ping = one('ping') === null ? null : Number(one('ping'));
    const time = one('time') === null ? 600 : Number(one('time'));
    const works = one('works') === null ? null : Number(one('works'));
    const countries = list('country') && unique(list('country')!.map((c) => c.toUpperCase()));
    const cm = (one('cm') ?? one('country_mode') ?? 'include').toLowerCase();
    const cities = list('city') && unique(list('city')!);
    const lowerServices = this.services.map((s) => s.toLowerCase());
    const services = list('service') && unique(list('service')!.map((s) => this.services[lowerServices.indexOf(s.toLowerCase())]));
    const count = one('count') === null ? null : Number(one('count'));
    const get = (one('get') ?? 'txt').toLowerCase();

    const nowS = Math.floor(nowMs / 1000);
    let rows = this.select(query, nowMs);
    const ips = list('ip') && unique(list('ip')!);
    const atAddress = atItems(ips);
    if (get === 'stats') return this.stats(rows.filter(atAddress), one('pretty') !== '0');

    // sort=random is not for the reference: its order is drawn per request.
    const sort = (one('sort') ?? 'time').toLowerCase();
    if (sort === 'ping') rows = [...rows].sort((a, b) => Math.round(a.ping_ms) - Math.round(b.ping_ms));
    if (sort === 'works') rows = [...rows].sort((a, b) => b.works - a.works);
    const offset = one('offset') === null ? 0 : Number(one('offset'));
    const page = (xs: SnapshotRecord[]): SnapshotRecord[] => xs.slice(offset, count === null ? undefined : offset + count);

    const disposition = get.endsWith('.file') ? `attachment; filename="proxies.${get.slice(0, -'.file'.length)}"` : null;
    if (get.startsWith('csv')) {
      rows = page(rows.filter(atAddress));
      return { status: 200, contentType: CSV_TYPE, disposition, body: this.csv(params, rows, null) };
    }
    if (!get.startsWith('json')) {
      rows = page(rows);
      const prefix = one('type_prefix') === '1';
      const body = rows.map((r) => `${prefix ? r.type + '://' : ''}${host(r.ip)}:${r.port}\n`).join('');
      return { status: 200, contentType: 'text/plain; charset=utf-8', disposition, body };
    }

    rows = rows.filter(atAddress);
    const format = (one('format') ?? 'array').toLowerCase();
    if (format === 'object') {
      const seen = new Set<string>();
      rows = rows.filter((r) => !seen.has(`${host(r.ip)}:${r.port}`) && !!seen.add(`${host(r.ip)}:${r.port}`));
    }
    rows = page(rows);

    const toObject = this.recordObject(params);
    const data =
      format === 'object'
        ? Object.fromEntries(rows.map((r) => [`${host(r.ip)}:${r.port}`, toObject(r)]))
        : rows.map(toObject);

    let value: unknown = data;
    if (one('wrap') === '1') {
      const filters: Record<string, unknown> = {};
      if (types) filters.type = types;
      if (anons) filters.anon = anons;
      if (ports) filters.port = ports;
      if (ping !== null) filters.ping = ping;
      filters.time = time;
      if (works !== null) filters.works = works;
      if (countries) {
        filters.country = countries;
        filters.cm = cm;
      }
      if (cities) filters.city = cities;
      if (services) filters.service = services.map((s) => s.toLowerCase());
      if (ips) filters.ip = ips;
      const ipv = list('ipv');
      if (ipv) filters.ipv = unique(ipv.map(Number));
      const asn = list('asn');
      if (asn) filters.asn = unique(asn.map(asnOf));
      for (const flag of ['hosting', 'mobile']) if (one(flag) !== null) filters[flag] = Number(one(flag));
      if (one('sort') !== null) filters.sort = sort;
      if (one('offset') !== null) filters.offset = offset;
      if (count !== null) filters.count = count;
      const local = new Date(nowS * 1000 + 7200 * 1000).toISOString().slice(0, 19);
      value = { status: 'ok', count: rows.length, timestamp: `${local}+02:00`, filters, data };
    }
    const body = one('pretty') === '0' ? JSON.stringify(value) : JSON.stringify(value, null, 2);
    return { status: 200, contentType: 'application/json; charset=utf-8', disposition, body };
  }

  /** The record object of a JSON answer, shaped by the query's `fields`, `split_ip` and `lang`. */
  private recordObject(params: URLSearchParams): (r: SnapshotRecord) => Record<string, unknown> {
    const columns = this.recordColumns(params);
    return (r) => Object.fromEntries(columns.map(([name, value]) => [name, value(r)]));
  }

  /** The fields of a JSON record, or the columns of a CSV row, in order: each name and its value. */
  private recordColumns(params: URLSearchParams): Array<[string, (r: SnapshotRecord) => unknown]> {
    const one = (name: string): string | null => params.getAll(name).find((v) => v !== '') ?? null;
    const split = one('split_ip') === '1';
    const lang = (one('lang') ?? 'ru').toLowerCase() as 'ru' | 'en';
    const fieldList = params.getAll('fields').join(',').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
    const wanted = (name: string): boolean => fieldList.length === 0 || fieldList.includes(name.toLowerCase());
    // Who runs the exit: only when named.
    const named = (name: string): boolean => fieldList.includes(name);
    const all: Array<[string, boolean, (r: SnapshotRecord) => unknown]> = [
      ['ip', wanted('ip'), (r) => (split ? r.ip : `${host(r.ip)}:${r.port}`)],
      ['port', split && wanted('port'), (r) => String(r.port)],
      ['ip_out', wanted('ip_out'), (r) => r.ip_out ?? r.ip],
      ['type', wanted('type'), (r) => r.type],
      ['anon', wanted('anon'), (r) => r.anon],
      ['ping', wanted('ping'), (r) => Math.round(r.ping_ms) / 1000],
      ['timecheck', wanted('timecheck'), (r) => timecheck(r.checked_at)],
      ['country', wanted('country'), (r) => r.country.toUpperCase()],
      ['city', wanted('city'), (r) => r.city?.[lang] ?? ''],
      ['works', wanted('works'), (r) => String(r.works)],
      ['asn', named('asn'), (r) => r.asn ?? null],
      ['org', named('org'), (r) => r.org ?? ''],
      ['hosting', named('hosting'), (r) => r.hosting ?? null],
      ['mobile', named('mobile'), (r) => r.mobile ?? null],
      ...this.services.map((s): [string, boolean, (r: SnapshotRecord) => unknown] => [s, wanted(s), (r) => (r.services ?? []).includes(s)]),
    ];
    return all.filter(([, keep]) => keep).map(([name, , value]) => [name, value]);
  }

  /** A CSV body (RFC 4180): the header row, then a row per record; in a change set, `op` and `key` first. */
  private csv(params: URLSearchParams, upserts: SnapshotRecord[], removes: string[] | null): string {
    const columns = this.recordColumns(params);
    const line = (cells: unknown[]): string => cells.map(csvCell).join(',') + '\r\n';
    const op = removes === null ? [] : ['op', 'key'];
    const lead = (r: SnapshotRecord): string[] => (removes === null ? [] : ['upsert', keyOf(r)]);
    return (
      line([...op, ...columns.map(([name]) => name)]) +
      upserts.map((r) => line([...lead(r), ...columns.map(([, value]) => value(r))])).join('') +
      (removes ?? []).map((k) => line(['remove', k, ...columns.map(() => null)])).join('')
    );
  }

  /**
   * The change set (docs/api.md, Keeping a list) of `query` from L(cursor),
   * what `then` selected at `cursorMs`, to L(now), what this snapshot
   * selects at `nowMs`: exactly their difference. Upserts: the records of
   * L(now) whose key was not in L(cursor), or was with other values.
   * Removes: the keys of L(cursor) not in L(now). `cursor` is the new
   * cursor, which the reference takes as given; a reset lists all of L(now).
   */
  changeSet(then: NaiveEngine, query: string, cursorMs: number, nowMs: number, cursor: string, reset: boolean): NaiveAnswer {
    const params = new URLSearchParams(query);
    const one = (name: string): string | null => params.getAll(name).find((v) => v !== '') ?? null;
    const get = (one('get') ?? 'txt').toLowerCase();
    const json = get.startsWith('json');
    const disposition = get.endsWith('.file') ? `attachment; filename="proxies.${get.slice(0, -'.file'.length)}"` : null;
    const now = this.listed(query, nowMs);
    let upserts = now;
    let removes: string[] = [];
    if (!reset) {
      const before = new Map(then.listed(query, cursorMs).map((r) => [keyOf(r), visible(r, then.services)]));
      const nowKeys = new Set(now.map(keyOf));
      upserts = now.filter((r) => before.get(keyOf(r)) !== visible(r, this.services));
      removes = [...before.keys()].filter((k) => !nowKeys.has(k)).sort();
    }
    if (json) {
      const toObject = this.recordObject(params);
      const value = { cursor, reset, upsert: Object.fromEntries(upserts.map((r) => [keyOf(r), toObject(r)])), remove: removes };
      const body = one('pretty') === '0' ? JSON.stringify(value) : JSON.stringify(value, null, 2);
      return { status: 200, contentType: 'application/json; charset=utf-8', disposition, body };
    }
    if (get.startsWith('csv')) return { status: 200, contentType: CSV_TYPE, disposition, body: this.csv(params, upserts, removes) };
    const body = upserts.map((r) => `+${keyOf(r)}\n`).join('') + removes.map((k) => `-${k}\n`).join('');
    return { status: 200, contentType: 'text/plain; charset=utf-8', disposition, body };
  }

  /** The records a whole list of `query` lists at `nowMs` (the `ip` of JSON and CSV applied, `format` ignored), in the default order. */
  listed(query: string, nowMs: number): SnapshotRecord[] {
    const params = new URLSearchParams(query);
    const get = (params.getAll('get').find((v) => v !== '') ?? 'txt').toLowerCase();
    const ips = get.startsWith('json') || get.startsWith('csv') ? params.getAll('ip').join(',').split(',').map((s) => s.trim()).filter((s) => s !== '') : [];
    return this.select(query, nowMs).filter(atItems(ips.length === 0 ? null : ips));
  }

  /** The records every filter of the query selects at `nowMs`, in the default order, before `ip`, sorting and paging. */
  select(query: string, nowMs: number): SnapshotRecord[] {
    const params = new URLSearchParams(query);
    const one = (name: string): string | null => params.getAll(name).find((v) => v !== '') ?? null;
    const list = (name: string): string[] | null => {
      const items = params.getAll(name).join(',').split(',').map((s) => s.trim()).filter((s) => s !== '');
      return items.length ? items : null;
    };
    const types = list('type')?.map((t) => t.toLowerCase());
    const anons = list('anon')?.map((t) => t.toLowerCase());
    const ports = list('port')?.map(Number);
    const ping = one('ping') === null ? null : Number(one('ping'));
    const time = one('time') === null ? 600 : Number(one('time'));
    const works = one('works') === null ? null : Number(one('works'));
    const countries = list('country')?.map((c) => c.toUpperCase());
    const cm = (one('cm') ?? one('country_mode') ?? 'include').toLowerCase();
    const cities = list('city');
    const lowerServices = this.services.map((s) => s.toLowerCase());
    const services = list('service')?.map((s) => this.services[lowerServices.indexOf(s.toLowerCase())]);
    const families = list('ipv')?.map(Number);
    const asns = list('asn')?.map(asnOf);
    const hosting = one('hosting') === null ? null : one('hosting') === '1';
    const mobile = one('mobile') === null ? null : one('mobile') === '1';
    const nowS = Math.floor(nowMs / 1000);
    return this.records.filter(
      (r) =>
        nowS - r.checked_at <= time &&
        (!types || types.includes(r.type)) &&
        (!anons || anons.includes(r.anon)) &&
        (!ports || ports.includes(r.port)) &&
        (ping === null || Math.round(r.ping_ms) <= ping) &&
        (works === null || r.works >= works) &&
        (!countries || countries.includes(r.country.toUpperCase()) === (cm === 'include')) &&
        (!cities || cities.some((c) => norm(c) === norm(r.city?.ru ?? '') || norm(c) === norm(r.city?.en ?? ''))) &&
        (!services || services.every((s) => (r.services ?? []).includes(s))) &&
        (!families || families.includes(isV6(r.ip) ? 6 : 4)) &&
        (!asns || asns.includes(r.asn ?? 0)) &&
        (hosting === null || r.hosting === hosting) &&
        (mobile === null || r.mobile === mobile),
    );
  }

  /** get=stats (docs/api.md, Counts): counts by type, anonymity, country and service. */
  private stats(rows: SnapshotRecord[], pretty: boolean): NaiveAnswer {
    const countOf = (keep: (r: SnapshotRecord) => boolean): number => rows.filter(keep).length;
    const type = Object.fromEntries(TYPES.map((t) => [t, countOf((r) => r.type === t)]));
    const anon = Object.fromEntries(['transparent', 'anonymous', 'elite'].map((a) => [a, countOf((r) => r.anon === a)]));
    const codes = [...new Set(rows.map((r) => r.country.toUpperCase()))];
    const byCountry = codes.map((c) => [c, countOf((r) => r.country.toUpperCase() === c)] as const);
    byCountry.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const service = Object.fromEntries(this.services.map((s) => [s, countOf((r) => (r.services ?? []).includes(s))]));
    // Each AS number with its records and the organisation most of them name (ties: the first in string order).
    const byAsn = new Map<number, SnapshotRecord[]>();
    for (const r of rows) {
      if (!r.asn) continue;
      const own = byAsn.get(r.asn);
      if (own) own.push(r);
      else byAsn.set(r.asn, [r]);
    }
    const asns = [...byAsn].map(([asn, own]) => {
      const votes = new Map<string, number>();
      for (const r of own) if (r.org) votes.set(r.org, (votes.get(r.org) ?? 0) + 1);
      const ranked = [...votes].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
      return { asn, org: ranked[0]?.[0] ?? '', count: own.length };
    });
    asns.sort((a, b) => b.count - a.count || a.asn - b.asn);
    const value = { count: rows.length, type, anon, country: Object.fromEntries(byCountry), service, asn: asns.slice(0, 100) };
    const body = pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
    return { status: 200, contentType: 'application/json; charset=utf-8', disposition: null, body };
  }
}
