import { mappedIPv4, parseIPv6 } from '../core/ipv6.js';
import { ANONS, MAX_ASN, RECORD_FIELDS, TYPES, parseIPv4 } from '../core/vocabulary.js';
import { parseCursor, selectionTag } from './cursor.js';
import { MAX_WAIT_S, type Get, type IpItem, type Plan, type Sort } from './plan.js';
import type { RawParams } from './query-string.js';

export const DEFAULT_TIME_S = 600;
const GETS: readonly Get[] = ['txt', 'json', 'csv', 'txt.file', 'json.file', 'csv.file', 'stats'];
const SORTS: readonly Sort[] = ['time', 'ping', 'works', 'random'];
const OUTPUT_ONLY = ['timecheck', 'ip_out'];
/**
 * Every parameter name a plan reads (docs/api.md, Parameters); the service
 * ignores any other, and `key` is read before the plan (query-split.ts).
 */
export const PLAN_PARAMETERS: ReadonlySet<string> = new Set([
  ...OUTPUT_ONLY,
  ...['type', 'anon', 'port', 'ping', 'time', 'works', 'country', 'cm', 'country_mode', 'city', 'service', 'ipv', 'asn', 'hosting', 'mobile', 'wait', 'get', 'since'],
  ...['sort', 'offset', 'count', 'lang', 'type_prefix', 'fields', 'split_ip', 'pretty', 'wrap', 'format', 'ip'],
]);

/** A value echoed into an error: control characters dropped, at most 64 characters. */
export function echo(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').slice(0, 64);
}

export type ParseResult = { ok: true; plan: Plan } | { ok: false; message: string };

const refuse = (message: string): ParseResult => ({ ok: false, message });

/**
 * Turns the decoded parameters into a validated plan (docs/api.md, Parameters), or the message of the
 * first invalid parameter in reading order. Nothing throws: a bad query is an ordinary answer.
 * `services` are the loaded snapshot's names, which `service` and `fields` accept.
 */
export function parsePlan(raw: RawParams, services: readonly string[]): ParseResult {
  if (raw.malformed !== null) return refuse(`Malformed percent-encoding or UTF-8 in parameter ${echo(raw.malformed)}`);
  const v = raw.values;
  for (const name of OUTPUT_ONLY) {
    if (v.has(name)) return refuse(`Parameter ${name} is output-only and cannot be used as a filter`);
  }

  // The readers below record the first failure and go on with a neutral value; the plan is
  // discarded if one was recorded, so what they return after a failure never matters.
  let failure: string | null = null;
  const fail = (message: string): null => {
    failure ??= message;
    return null;
  };
  const finish = (plan: Plan): ParseResult => (failure === null ? { ok: true, plan } : refuse(failure));
  /** A list's plan, once its filters are known: a cursor must name them. */
  const finishList = (plan: Plan): ParseResult => {
    if (failure === null && plan.since && plan.since.selection !== selectionTag(plan)) fail('The cursor was issued for other filters');
    return finish(plan);
  };
  const invalid = (name: string, value: string, allowed: string): null => fail(`Invalid ${name} "${echo(value)}"; allowed: ${allowed}`);

  const scalar = (name: string): string | null => {
    const list = v.get(name);
    if (!list) return null;
    if (list.length > 1) return fail(`Parameter ${name} is given more than once`);
    return list[0];
  };
  const list = (name: string): string[] | null => {
    const given = v.get(name);
    if (!given) return null;
    const items = given.flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
    return items.length > 0 ? items : null;
  };
  const integer = (name: string, min: number, max: number, allowed: string): number | null => {
    const s = scalar(name);
    if (s === null) return null;
    const n = /^[0-9]+$/.test(s) ? Number(s) : NaN;
    return n >= min && n <= max ? n : invalid(name, s, allowed);
  };
  const choice = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const s = scalar(name);
    if (s === null) return fallback;
    const lower = s.toLowerCase() as T;
    if (allowed.includes(lower)) return lower;
    invalid(name, s, allowed.join(', '));
    return fallback;
  };
  const flag = (name: string, fallback: boolean): boolean => choice(name, ['0', '1'], fallback ? '1' : '0') === '1';
  /** Items of a list parameter mapped through `resolve`, without duplicates, in first-given order. */
  const resolved = <T>(name: string, resolve: (item: string) => T | undefined, allowed: string, dedupeBy?: (t: T) => unknown): T[] | null => {
    const items = list(name);
    if (!items) return null;
    const out: T[] = [];
    const seen = new Set<unknown>();
    for (const item of items) {
      const t = resolve(item);
      if (t === undefined) return invalid(name, item, allowed);
      const id = dedupeBy ? dedupeBy(t) : t;
      if (!seen.has(id)) {
        seen.add(id);
        out.push(t);
      }
    }
    return out;
  };
  const enumIndex = (names: readonly string[]) => (item: string) => {
    const i = names.indexOf(item.toLowerCase());
    return i < 0 ? undefined : i;
  };
  const MAX_INT = Number.MAX_SAFE_INTEGER;
  const ipItems = (): IpItem[] | null => resolved('ip', parseIpItem, 'a.b.c.d, a.b.c.d:port, an IPv6 address or [IPv6]:port', (i) => i.text);

  const types = resolved('type', enumIndex(TYPES), TYPES.join(', '));
  const anons = resolved('anon', enumIndex(ANONS), ANONS.join(', '));
  const ports = resolved('port', (s) => (/^[0-9]+$/.test(s) && Number(s) >= 1 && Number(s) <= 65535 ? Number(s) : undefined), 'integers from 1 to 65535');
  const ping = integer('ping', 1, MAX_INT, 'an integer >= 1 (milliseconds)');
  const time = integer('time', 1, MAX_INT, 'an integer >= 1 (seconds)') ?? DEFAULT_TIME_S;
  const works = integer('works', 0, 100, 'an integer from 0 to 100');
  const countries = resolved('country', (s) => (/^[A-Za-z]{2}$/.test(s) ? s.toUpperCase() : undefined), 'two-letter country codes');
  const cm = choice('cm', ['include', 'except'], 'include');
  const countryMode = choice('country_mode', ['include', 'except'], cm);
  if (v.has('cm') && v.has('country_mode') && cm !== countryMode) {
    fail('Parameters cm and country_mode disagree; allowed: include or except, the same in both');
  }
  const cities = resolved('city', (s) => s, 'city names');
  const lowerServices = services.map((s) => s.toLowerCase());
  const services_ = resolved('service', (s) => services[lowerServices.indexOf(s.toLowerCase())], services.join(', '));
  const ipv = resolved('ipv', (s) => (s === '4' || s === '6' ? Number(s) : undefined), '4, 6');
  const asns = resolved('asn', parseAsn, `AS numbers from 1 to ${MAX_ASN}, as 13335 or AS13335`);
  const networkFlag = (name: string): number | null => (v.has(name) ? Number(choice(name, ['0', '1'], '0')) : null);
  const hosting = networkFlag('hosting');
  const mobile = networkFlag('mobile');
  const wait = integer('wait', 1, MAX_WAIT_S, `an integer from 1 to ${MAX_WAIT_S} (seconds)`);
  const get = choice('get', GETS, 'txt');
  const json = get === 'json' || get === 'json.file';
  const csv = get === 'csv' || get === 'csv.file';
  const plan: Plan = {
    types, anons, ports, portSet: ports && new Set(ports), ping, time, works, countries, countryMode, cities, services: services_, wait,
    sort: null, offset: null, count: null, lang: 'ru', get, json, csv, typePrefix: false, fields: null, splitIp: false, pretty: true, wrap: false, format: 'array', ips: null, ipv,
    asns, hosting, mobile, since: null,
  };
  const since = scalar('since');
  // Parameters that shape a list, or belong to the other output, are ignored and not validated.
  if (get === 'stats') {
    if (since !== null) fail('Parameter since cannot be used with get=stats: a change set is a list');
    plan.pretty = flag('pretty', true);
    plan.ips = ipItems();
    return finish(plan);
  }
  plan.sort = v.has('sort') ? choice('sort', SORTS, 'time') : null;
  plan.offset = integer('offset', 0, MAX_INT, 'an integer >= 0');
  plan.count = integer('count', 1, MAX_INT, 'an integer >= 1');
  plan.lang = choice('lang', ['ru', 'en'], 'ru');
  if (since !== null) {
    for (const [name, given] of [['count', plan.count !== null], ['offset', plan.offset !== null], ['sort=random', plan.sort === 'random']] as const) {
      if (given) fail(`Parameter since cannot be used with ${name}: a change set is the whole list's`);
    }
    plan.since = parseCursor(since) ?? invalid('since', since, 'a cursor from a List-Cursor header');
  }
  if (!json && !csv) {
    plan.typePrefix = flag('type_prefix', false);
    return finishList(plan);
  }
  const fieldNames = [...RECORD_FIELDS, ...services];
  const lowerFields = fieldNames.map((f) => f.toLowerCase());
  const fields = resolved('fields', (s) => fieldNames[lowerFields.indexOf(s.toLowerCase())], fieldNames.join(', '));
  plan.fields = fields && fieldNames.filter((f) => fields.includes(f));
  plan.splitIp = flag('split_ip', false);
  // CSV ignores JSON's layout: pretty, wrap and format keep their defaults.
  if (json) {
    plan.pretty = flag('pretty', true);
    plan.wrap = flag('wrap', false);
    plan.format = choice('format', ['array', 'object'], 'array');
  }
  plan.ips = ipItems();
  return finishList(plan);
}

/** An AS number, with or without an `AS` prefix in any case. */
function parseAsn(item: string): number | undefined {
  const m = /^(?:as)?([0-9]{1,10})$/i.exec(item);
  const n = m ? Number(m[1]) : 0;
  return n >= 1 && n <= MAX_ASN ? n : undefined;
}

/** `a.b.c.d`, `a.b.c.d:port`, a bare IPv6 address in any text form, or `[IPv6]:port`; an IPv4-mapped address is its IPv4 one. */
function parseIpItem(text: string): IpItem | undefined {
  const bracketed = /^\[([^\]]*)\]:([0-9]{1,5})$/.exec(text);
  const colon = text.indexOf(':');
  const bareV6 = colon >= 0 && text.indexOf(':', colon + 1) >= 0;
  if (bracketed || bareV6) {
    const groups = parseIPv6(bracketed ? bracketed[1] : text);
    const port = bracketed ? Number(bracketed[2]) : -1;
    if (groups === null || port === 0 || port > 65535) return undefined;
    const mapped = mappedIPv4(groups);
    if (mapped >= 0) return { text, ip: mapped, v6: null, port };
    const v6 = Uint32Array.from({ length: 4 }, (_, w) => groups[w * 2] * 65536 + groups[w * 2 + 1]);
    return { text, ip: -1, v6, port };
  }
  const ip = parseIPv4(colon < 0 ? text : text.slice(0, colon));
  if (ip < 0) return undefined;
  if (colon < 0) return { text, ip, v6: null, port: -1 };
  const portText = text.slice(colon + 1);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : 0;
  return port >= 1 && port <= 65535 ? { text, ip, v6: null, port } : undefined;
}
