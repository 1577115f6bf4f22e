import { ANONS, TYPES } from '../core/vocabulary.js';
import type { Store } from '../store/store.js';
import { execute } from './execute.js';
import type { Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/** Snapshots with at most this many services are tallied per set of services (a table of 2^n counts). */
const MAX_MASK_BITS = 12;

/** The counts of get=stats (docs/api.md, Counts), over the records that match every filter. */
export interface StatsCounts {
  count: number;
  /** Per type code, per anonymity code, per service index of the snapshot. */
  types: number[];
  anons: number[];
  services: number[];
  /** Countries that match at least once: by count descending, then code ascending. */
  countries: Array<[code: string, count: number]>;
  /** The largest autonomous systems of the exits (MAX_STATS_ASNS at most): by count descending, then number ascending. */
  asns: AsnCount[];
}

/** An autonomous system in get=stats: its number, the organisation most of its records name ('' when none does; ties to the first in string order), its records. */
export interface AsnCount {
  asn: number;
  org: string;
  count: number;
}

/** How many autonomous systems get=stats lists. */
export const MAX_STATS_ASNS = 100;

/**
 * Counts the plan's matches in the window ending at row `end`. The list-shaping
 * parameters are not in a stats plan, so the selection is every match, in
 * row order; one pass over it tallies all four breakdowns.
 */
export function countStats(store: Store, plan: Plan, end: number, scratch: QueryScratch): StatsCounts {
  const n = execute(store, plan, end, scratch);
  const rows = scratch.rows;
  const { type, anon, country, services, network } = store.c;
  const byNetwork = new Uint32Array(store.meta.networks.length);
  // A snapshot that places no exit costs nothing more.
  const networks = byNetwork.length > 1 ? network : null;
  const serviceCount = store.meta.services.length;
  // One increment per breakdown and row: type and anonymity as one pair, services as their whole set (bit masks, expanded below).
  const byPair = new Uint32Array(TYPES.length * ANONS.length);
  const byCountry = new Uint32Array(store.meta.countries.length);
  const byMask = serviceCount <= MAX_MASK_BITS ? new Uint32Array(1 << serviceCount) : null;
  const byService = new Uint32Array(32);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    byPair[type[r] * ANONS.length + anon[r]]++;
    byCountry[country[r]]++;
    if (networks !== null) byNetwork[networks[r]]++;
    if (byMask) byMask[services[r]]++;
    else for (let bits = services[r]; bits !== 0; bits &= bits - 1) byService[31 - Math.clz32(bits & -bits)]++;
  }
  if (byMask) {
    byMask.forEach((count, mask) => {
      for (let bits = mask; bits !== 0; bits &= bits - 1) byService[31 - Math.clz32(bits & -bits)] += count;
    });
  }
  const types = TYPES.map((_, t) => ANONS.reduce((sum, _a, a) => sum + byPair[t * ANONS.length + a], 0));
  const anons = ANONS.map((_, a) => TYPES.reduce((sum, _t, t) => sum + byPair[t * ANONS.length + a], 0));
  const countries: Array<[string, number]> = [];
  byCountry.forEach((count, id) => {
    if (count > 0) countries.push([store.meta.countries[id], count]);
  });
  countries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { count: n, types, anons, services: Array.from(byService.subarray(0, serviceCount)), countries, asns: largestAsns(store, byNetwork) };
}

/** The largest autonomous systems from the counts per network (an AS number with one organisation each). */
function largestAsns(store: Store, byNetwork: Uint32Array): AsnCount[] {
  const networks = store.meta.networks;
  const byAsn = new Map<number, { count: number; org: string; orgCount: number }>();
  byNetwork.forEach((count, id) => {
    const { asn, org } = networks[id];
    if (count === 0 || asn === 0) return;
    let a = byAsn.get(asn);
    if (!a) byAsn.set(asn, (a = { count: 0, org: '', orgCount: 0 }));
    a.count += count;
    if (org !== '' && (count > a.orgCount || (count === a.orgCount && org < a.org))) {
      a.org = org;
      a.orgCount = count;
    }
  });
  return [...byAsn]
    .map(([asn, a]) => ({ asn, org: a.org, count: a.count }))
    .sort((a, b) => b.count - a.count || a.asn - b.asn)
    .slice(0, MAX_STATS_ASNS);
}
