import { setBit } from '../store/bitset.js';
import { normalizeCity, type Store } from '../store/store.js';
import type { IpItem, Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/**
 * A conjunct of the selection: a row passes when its bit is set in any of
 * `sets` (or in none of them, when negated).
 */
interface Clause {
  sets: Uint32Array[];
  negate: boolean;
}

/**
 * Selects the plan's rows among the first `end` rows of `store` (the `time`
 * prefix, from `store.prefixEnd`) into `scratch.rows`, in output order,
 * and returns how many. Word by word,
 * the clauses' bitsets are intersected over the `time` prefix only; ping and
 * works are then checked on the columns of the surviving rows, and the scan
 * stops as soon as `count` rows are found. Ports are checked like ping and works.
 */
export function execute(store: Store, plan: Plan, end: number, scratch: QueryScratch): number {
  if (end === 0) return 0;
  scratch.fit(store);
  const words = (end + 31) >>> 5;
  const clauses: Clause[] = [];

  if (plan.types && plan.types.length < store.typeSets.length) clauses.push({ sets: plan.types.map((t) => store.typeSets[t]), negate: false });
  if (plan.anons && plan.anons.length < store.anonSets.length) clauses.push({ sets: plan.anons.map((a) => store.anonSets[a]), negate: false });
  if (plan.countries) {
    const sets = plan.countries.filter((code) => store.countryId.has(code)).map((code) => store.countrySets[store.countryId.get(code)!]);
    const except = plan.countryMode === 'except';
    if (sets.length === 0 && !except) return 0;
    if (sets.length > 0) clauses.push({ sets, negate: except });
  }
  if (plan.services) for (const name of plan.services) clauses.push({ sets: [store.serviceSets[store.serviceId.get(name.toLowerCase())!]], negate: false });
  if (plan.cities) {
    if (!markCities(store, scratch.cityBits, plan.cities, end, words)) return 0;
    clauses.push({ sets: [scratch.cityBits], negate: false });
  }
  if (plan.json && plan.ips) {
    if (!markAddresses(store, scratch.ipBits, plan.ips, end, words)) return 0;
    clauses.push({ sets: [scratch.ipBits], negate: false });
  }
  return collect(store, scratch, plan, clauses, end, words);
}

function collect(store: Store, scratch: QueryScratch, plan: Plan, clauses: Clause[], end: number, words: number): number {
  const { ping, works, addrId, port } = store.c;
  const ports = plan.portSet;
  const out = scratch.rows;
  const limit = plan.count ?? end;
  const maxPing = plan.ping ?? Infinity;
  const minWorks = plan.works ?? 0;
  const onePerAddress = plan.json && plan.format === 'object';
  if (clauses.length === 0 && maxPing === Infinity && minWorks === 0 && !ports && !onePerAddress) {
    // Nothing to check: the answer is the first rows of the window (the full dumps).
    const n = Math.min(limit, end);
    for (let r = 0; r < n; r++) out[r] = r;
    return n;
  }
  const stamps = scratch.addrStamp;
  let stamp = 0;
  if (onePerAddress) {
    stamp = scratch.stamp = (scratch.stamp + 1) >>> 0;
    if (stamp === 0) {
      stamps.fill(0);
      stamp = scratch.stamp = 1;
    }
  }
  // Words are handled as int32: -1 is all 32 bits.
  const lastMask = (end & 31) === 0 ? -1 : ~(-1 << (end & 31));
  let n = 0;
  for (let w = 0; w < words; w++) {
    let m = w === words - 1 ? lastMask : -1;
    for (let k = 0; k < clauses.length && m !== 0; k++) {
      const sets = clauses[k].sets;
      let any = 0;
      for (let s = 0; s < sets.length; s++) any |= sets[s][w];
      m &= clauses[k].negate ? ~any : any;
    }
    while (m !== 0) {
      const low = m & -m;
      const r = (w << 5) | (31 - Math.clz32(low));
      m ^= low;
      if (ping[r] > maxPing || works[r] < minWorks || (ports !== null && !ports.has(port[r]))) continue;
      if (onePerAddress) {
        const a = addrId[r];
        if (stamps[a] === stamp) continue;
        stamps[a] = stamp;
      }
      out[n++] = r;
      if (n === limit) return n;
    }
  }
  return n;
}

/** Sets the bits of the prefix rows whose city matches; false when none does. */
function markCities(store: Store, bits: Uint32Array, cities: readonly string[], end: number, words: number): boolean {
  bits.fill(0, 0, words);
  const { cityStart, cityRows } = store.c;
  let any = false;
  for (const name of cities) {
    for (const id of store.cityIds.get(normalizeCity(name)) ?? []) {
      // Postings are ascending, so the prefix ends at the first row past it.
      for (let j = cityStart[id]; j < cityStart[id + 1] && cityRows[j] < end; j++) {
        setBit(bits, cityRows[j]);
        any = true;
      }
    }
  }
  return any;
}

/** Sets the bits of the prefix rows at the listed addresses; false when none is. */
function markAddresses(store: Store, bits: Uint32Array, items: readonly IpItem[], end: number, words: number): boolean {
  bits.fill(0, 0, words);
  const { byAddress, ip, port } = store.c;
  let any = false;
  for (const item of items) {
    // byAddress is ordered by ip then port: find the first row at or after (ip, port).
    let lo = 0;
    let hi = byAddress.length;
    const wantPort = item.port < 0 ? 0 : item.port;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = byAddress[mid];
      if (ip[r] < item.ip || (ip[r] === item.ip && port[r] < wantPort)) lo = mid + 1;
      else hi = mid;
    }
    for (let j = lo; j < byAddress.length; j++) {
      const r = byAddress[j];
      if (ip[r] !== item.ip || (item.port >= 0 && port[r] !== item.port)) break;
      if (r < end) {
        setBit(bits, r);
        any = true;
      }
    }
  }
  return any;
}
