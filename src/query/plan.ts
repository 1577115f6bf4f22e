import type { Cursor } from './cursor.js';

/** A validated /api request: what to select and how to write it. */
export type Get = 'txt' | 'json' | 'csv' | 'txt.file' | 'json.file' | 'csv.file' | 'stats';
export type Sort = 'time' | 'ping' | 'works' | 'random';
/** The longest `wait` a request may ask for, in seconds (docs/api.md, ETag and wait). */
export const MAX_WAIT_S = 60;

export interface IpItem {
  /** As given, trimmed: the form shown in the envelope's filters. */
  text: string;
  /** An IPv4 address's number; -1 for an IPv6 one. */
  ip: number;
  /** An IPv6 address's 4 words (an AddressTable of one); null for an IPv4 one. */
  v6: Uint32Array | null;
  /** -1 for a bare address, which matches any port. */
  port: number;
}

export interface Plan {
  /** Type codes, in first-given order, without duplicates; null = no filter. */
  types: number[] | null;
  anons: number[] | null;
  /** Ports, in first-given order, without duplicates (docs/api.md, Parameters). */
  ports: number[] | null;
  /** The same ports, for the check per row. */
  portSet: ReadonlySet<number> | null;
  ping: number | null;
  time: number;
  works: number | null;
  /** Upper-case codes. */
  countries: string[] | null;
  countryMode: 'include' | 'except';
  /** As given, trimmed (the envelope shows these); matched normalized. */
  cities: string[] | null;
  /** Service names as the snapshot spells them. */
  services: string[] | null;
  /** Seconds to hold a request whose If-None-Match matches (docs/api.md, ETag and wait); not part of the answer. */
  wait: number | null;
  /** The order (docs/api.md, Parameters); null when not given, which is `time`. */
  sort: Sort | null;
  /** Entries skipped before `count` applies; null when not given. */
  offset: number | null;
  count: number | null;
  lang: 'ru' | 'en';
  get: Get;
  /** A list of records as JSON (get=json, json.file); not get=stats. */
  json: boolean;
  /** A list of records as CSV (get=csv, csv.file): JSON's fields as columns. */
  csv: boolean;
  typePrefix: boolean;
  /** JSON keys (CSV columns) to output, canonical names; null = the default ones. */
  fields: string[] | null;
  splitIp: boolean;
  pretty: boolean;
  wrap: boolean;
  format: 'array' | 'object';
  /** JSON, CSV and stats only. */
  ips: IpItem[] | null;
  /** The entry address's families, 4 and 6, in first-given order, without duplicates; null = no filter. */
  ipv: number[] | null;
  /** The exit's AS numbers, in first-given order, without duplicates; null = no filter. */
  asns: number[] | null;
  /** Keep the rows whose exit's flag is known and equal to this (0 or 1); null = no filter. */
  hosting: number | null;
  mobile: number | null;
  /** The cursor a change set starts from (docs/api.md, Keeping a list); null for a whole list. */
  since: Cursor | null;
}

/**
 * Whether the body for a narrower time window is the rows of this one's
 * below the window's end (the default order, freshest first, without the
 * envelope, whose count and time change): what the cache and productions
 * under way narrow.
 */
export const narrowable = (p: Plan): boolean => p.get !== 'stats' && p.since === null && !(p.json && p.wrap) && (p.sort ?? 'time') === 'time';

/** The exit network's filters, or null when none is given. */
export const networkFilters = (p: Plan): [number[] | null, number | null, number | null] | null =>
  p.asns === null && p.hosting === null && p.mobile === null ? null : [p.asns, p.hosting, p.mobile];

const keys = new WeakMap<Plan, string>();

/**
 * The response cache key: everything the body depends on, in one fixed order,
 * and nothing else (the other output's parameters are left out). Plans are
 * never changed once parsed, so each one's key is worked out once.
 */
export function planKey(p: Plan): string {
  let key = keys.get(p);
  if (key === undefined) keys.set(p, (key = keyOf(p)));
  return key;
}

function keyOf(p: Plan): string {
  const select: unknown[] = [p.types, p.anons, p.ports, p.ping, p.time, p.works, p.countries, p.countries ? p.countryMode : '', p.cities, p.services, p.ipv, p.sort, p.offset, p.count, p.since?.text ?? null];
  // Only when given: the keys (and ETags) of plans without them stay what they were.
  const network = networkFilters(p);
  if (network) select.push(network);
  const output = p.json || p.csv || p.get === 'stats'
    ? [p.get, p.lang, p.fields, p.splitIp, p.pretty, p.wrap, p.format, p.ips?.map((i) => i.text) ?? null]
    : [p.get, p.typePrefix];
  return JSON.stringify([select, output]);
}
