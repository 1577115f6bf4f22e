import { ANONS, TYPES } from '../snapshot/format.js';
import type { Store } from '../store/store.js';
import { execute } from './execute.js';
import type { Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/** The counts of get=stats (API.md 5.3), over the records that match every filter. */
export interface StatsCounts {
  count: number;
  /** Per type code, per anonymity code, per service index of the snapshot. */
  types: number[];
  anons: number[];
  services: number[];
  /** Countries that match at least once: by count descending, then code ascending. */
  countries: Array<[code: string, count: number]>;
}

/**
 * Counts the plan's matches in the window ending at row `end`. The list-shaping
 * parameters are not in a stats plan, so the selection is every match, in
 * row order; one pass over it tallies all four breakdowns.
 */
export function countStats(store: Store, plan: Plan, end: number, scratch: QueryScratch): StatsCounts {
  const n = execute(store, plan, end, scratch);
  const rows = scratch.rows;
  const { type, anon, country, services } = store.c;
  const types = new Array<number>(TYPES.length).fill(0);
  const anons = new Array<number>(ANONS.length).fill(0);
  const byCountry = new Uint32Array(store.meta.countries.length);
  const serviceCount = store.meta.services.length;
  const byService = new Uint32Array(32);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    types[type[r]]++;
    anons[anon[r]]++;
    byCountry[country[r]]++;
    for (let bits = services[r]; bits !== 0; bits &= bits - 1) byService[31 - Math.clz32(bits & -bits)]++;
  }
  const countries: Array<[string, number]> = [];
  byCountry.forEach((count, id) => {
    if (count > 0) countries.push([store.meta.countries[id], count]);
  });
  countries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { count: n, types, anons, services: Array.from(byService.subarray(0, serviceCount)), countries };
}
