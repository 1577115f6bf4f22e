import { setBit } from '../store/bitset.js';
import { addressIndex, packKey } from '../store/columns.js';
import { normalizeCity, type Store } from '../store/store.js';
import type { IpItem, Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/** `execute`, unless the scratch still holds the same selection (see QueryScratch.remember); the rows stay there either way. */
export function selectRows(store: Store, plan: Plan, end: number, scratch: QueryScratch): number {
  const kept = scratch.remembered(store, plan, end);
  if (kept >= 0) return kept;
  const n = execute(store, plan, end, scratch);
  scratch.remember(store, plan, end, n);
  return n;
}

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
  if (plan.ipv && plan.ipv.length === 1) clauses.push({ sets: [store.ipvSets[plan.ipv[0] === 4 ? 0 : 1]], negate: false });
  if (plan.asns) {
    if (!markNetworks(store, scratch.asnBits, plan.asns, end, words)) return 0;
    clauses.push({ sets: [scratch.asnBits], negate: false });
  }
  if (plan.hosting !== null) clauses.push({ sets: [store.hostingSets[plan.hosting]], negate: false });
  if (plan.mobile !== null) clauses.push({ sets: [store.mobileSets[plan.mobile]], negate: false });
  if (plan.ips) {
    if (!markAddresses(store, scratch.ipBits, plan.ips, end, words)) return 0;
    clauses.push({ sets: [scratch.ipBits], negate: false });
  }
  // A bound below every ping: no row can pass.
  if (plan.ping !== null && store.pingRankAtMost(plan.ping) < 0) return 0;
  return collect(store, scratch, plan, clauses, end, words);
}

/**
 * What is left to check of a row that the clauses let through: ping, works,
 * port, one record per address (format=object, in the order of the
 * selection), then the `offset` entries skipped. One per query.
 */
class RowCheck {
  private readonly pingRank: Uint16Array | Uint32Array;
  private readonly works: Uint8Array;
  private readonly port: Uint16Array;
  private readonly addrId: Uint32Array;
  /** The highest ping rank let through. */
  private readonly maxPingRank: number;
  private readonly minWorks: number;
  private readonly ports: ReadonlySet<number> | null;
  private readonly stamps: Uint32Array;
  private readonly stamp: number;
  /** Nothing but the offset to check. */
  readonly trivial: boolean;
  skip: number;

  constructor(store: Store, scratch: QueryScratch, plan: Plan, readonly onePerAddress: boolean) {
    ({ pingRank: this.pingRank, works: this.works, port: this.port, addrId: this.addrId } = store.c);
    // Ranks stay small integers either way: the comparison in take() never meets a double.
    this.maxPingRank = plan.ping === null ? store.c.pingValues.length : store.pingRankAtMost(plan.ping);
    this.minWorks = plan.works ?? 0;
    this.ports = plan.portSet;
    this.skip = plan.offset ?? 0;
    this.trivial = plan.ping === null && this.minWorks === 0 && this.ports === null && !onePerAddress;
    this.stamps = scratch.addrStamp;
    let stamp = 0;
    if (onePerAddress) {
      stamp = scratch.stamp = (scratch.stamp + 1) >>> 0;
      if (stamp === 0) {
        this.stamps.fill(0);
        stamp = scratch.stamp = 1;
      }
    }
    this.stamp = stamp;
  }

  /** Whether row `r` is an entry of the answer (after the offset). */
  take(r: number): boolean {
    if (this.pingRank[r] > this.maxPingRank || this.works[r] < this.minWorks || (this.ports !== null && !this.ports.has(this.port[r]))) return false;
    if (this.onePerAddress) {
      const a = this.addrId[r];
      if (this.stamps[a] === this.stamp) return false;
      this.stamps[a] = this.stamp;
    }
    if (this.skip > 0) {
      this.skip--;
      return false;
    }
    return true;
  }
}

/** The rows of the plan's order: the default one (freshest first), a precomputed one, or a random one. */
function collect(store: Store, scratch: QueryScratch, plan: Plan, clauses: Clause[], end: number, words: number): number {
  const onePerAddress = plan.json && plan.format === 'object';
  const limit = plan.count ?? end;
  switch (plan.sort ?? 'time') {
    case 'ping':
      return collectInOrder(store.c.byPing, scratch.rows, new RowCheck(store, scratch, plan, onePerAddress), clauses, end, limit);
    case 'works':
      return collectInOrder(store.c.byWorks, scratch.rows, new RowCheck(store, scratch, plan, onePerAddress), clauses, end, limit);
    case 'random': {
      // Every match, then a uniformly random order (Fisher-Yates), then one per address, offset and count in that order.
      const all = collectInWindow(scratch.rows, new RowCheck(store, scratch, { ...plan, offset: null }, false), clauses, end, words, end);
      return shuffleAndPage(scratch.rows, all, new RowCheck(store, scratch, { ...plan, ping: null, works: null, portSet: null }, onePerAddress), limit);
    }
    default:
      return collectInWindow(scratch.rows, new RowCheck(store, scratch, plan, onePerAddress), clauses, end, words, limit);
  }
}

/** In row order: the clauses' bitsets intersected a word at a time over the window. */
function collectInWindow(out: Uint32Array, check: RowCheck, clauses: Clause[], end: number, words: number, limit: number): number {
  if (clauses.length === 0 && check.trivial) {
    // Nothing to check: the answer is the rows of the window from the offset on (the full dumps).
    const first = Math.min(check.skip, end);
    const n = Math.min(limit, end - first);
    for (let i = 0; i < n; i++) out[i] = first + i;
    return n;
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
      if (!check.take(r)) continue;
      out[n++] = r;
      if (n === limit) return n;
    }
  }
  return n;
}

/** In a precomputed order of all rows: each row in the window is tested against the clauses' bits. */
function collectInOrder(order: Uint32Array, out: Uint32Array, check: RowCheck, clauses: Clause[], end: number, limit: number): number {
  let n = 0;
  for (let j = 0; j < order.length; j++) {
    const r = order[j];
    if (r >= end) continue;
    const w = r >>> 5;
    const bit = 1 << (r & 31);
    let pass = true;
    for (let k = 0; k < clauses.length && pass; k++) {
      const sets = clauses[k].sets;
      let any = 0;
      for (let s = 0; s < sets.length; s++) any |= sets[s][w];
      pass = ((any & bit) !== 0) !== clauses[k].negate;
    }
    if (!pass || !check.take(r)) continue;
    out[n++] = r;
    if (n === limit) return n;
  }
  return n;
}

/** Shuffles `rows[0..m)` in place, then keeps the entries `check` takes, up to `limit`, in that order. */
function shuffleAndPage(rows: Uint32Array, m: number, check: RowCheck, limit: number): number {
  for (let i = m - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    const t = rows[i];
    rows[i] = rows[j];
    rows[j] = t;
  }
  let n = 0;
  for (let i = 0; i < m && n < limit; i++) if (check.take(rows[i])) rows[n++] = rows[i];
  return n;
}

/** Sets the bits of the prefix rows whose city matches; false when none does. */
function markCities(store: Store, bits: Uint32Array, cities: readonly string[], end: number, words: number): boolean {
  bits.fill(0, 0, words);
  // Items that differ in case or form name one city (and a city's two names one id): each id is marked once.
  const ids = new Set<number>();
  for (const name of cities) for (const id of store.cityIds.get(normalizeCity(name)) ?? []) ids.add(id);
  return markPostings(bits, store.c.cityStart, store.c.cityRows, ids, end);
}

/** Sets the bits of the prefix rows (below `end`) of each id's postings (rows[start[id] .. start[id + 1]), ascending); false when none is. */
function markPostings(bits: Uint32Array, start: Uint32Array, rows: Uint32Array, ids: Iterable<number>, end: number): boolean {
  let any = false;
  for (const id of ids) {
    // Postings are ascending, so the prefix ends at the first row past it.
    for (let j = start[id]; j < start[id + 1] && rows[j] < end; j++) {
      setBit(bits, rows[j]);
      any = true;
    }
  }
  return any;
}

/** Sets the bits of the prefix rows whose exit is in one of the AS numbers; false when none is. */
function markNetworks(store: Store, bits: Uint32Array, asns: readonly number[], end: number, words: number): boolean {
  bits.fill(0, 0, words);
  return markPostings(bits, store.c.networkStart, store.c.networkRows, asns.flatMap((asn) => store.asnNetworks.get(asn) ?? []), end);
}

/** Sets the bits of the prefix rows at the listed addresses; false when none is. */
function markAddresses(store: Store, bits: Uint32Array, items: readonly IpItem[], end: number, words: number): boolean {
  bits.fill(0, 0, words);
  const { byAddress, addrKey, v6Entries } = store.c;
  let any = false;
  for (const item of items) {
    // An IPv6 address is sought by its index among the store's: one it does not have matches nothing.
    const v6 = item.v6 !== null;
    const ip = v6 ? addressIndex(v6Entries, item.v6!) : item.ip;
    if (ip < 0) continue;
    // The keys of byAddress ascend: those of the address (and port) are one run.
    const first = packKey(ip, item.port < 0 ? 0 : item.port, 0, v6);
    const stop = item.port < 0 ? packKey(ip + 1, 0, 0, v6) : packKey(ip, item.port + 1, 0, v6);
    let lo = 0;
    let hi = byAddress.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (addrKey[mid] < first) lo = mid + 1;
      else hi = mid;
    }
    for (let j = lo; j < byAddress.length && addrKey[j] < stop; j++) {
      const r = byAddress[j];
      if (r < end) {
        setBit(bits, r);
        any = true;
      }
    }
  }
  return any;
}
