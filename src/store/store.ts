import { ANONS, TYPES } from '../core/vocabulary.js';
import { member } from './bitset.js';
import type { ByteStrings, StoreColumns, StoreMeta } from './columns.js';
import { startHistory, type History } from './history.js';
import { utf8 } from './encode.js';

/** The comparison form of a city name (docs/api.md, Parameters). */
export const normalizeCity = (s: string): string => s.trim().normalize('NFC').toLowerCase();

function longest(strings: ByteStrings): number {
  let max = 0;
  for (let i = 0; i + 1 < strings.off.length; i++) max = Math.max(max, strings.off[i + 1] - strings.off[i]);
  return max;
}

/**
 * Stores of this thread still in memory: each counts from its construction
 * until a collection finds it unreachable. Its columns are shared, so they go
 * back to the system only once every thread's count has let go of it.
 */
let held = 0;
const collected = new FinalizationRegistry<undefined>(() => void held--);
export const storesHeld = (): number => held;

export interface StoreSource {
  file: string;
  loadedAtMs: number;
  generation: number;
}

/**
 * One immutable snapshot, ready to query. Built in a worker; here only the
 * small lookup maps are derived. Nothing in it changes after construction:
 * the scratch space of queries belongs to their caller.
 */
export class Store {
  readonly rows: number;
  readonly words: number;
  readonly countryId: ReadonlyMap<string, number>;
  /** Lower-cased service name → index. */
  readonly serviceId: ReadonlyMap<string, number>;
  /** Normalized city name → ids of cities with that name in ru or en. */
  readonly cityIds: ReadonlyMap<string, readonly number[]>;
  readonly typeSets: Uint32Array[];
  readonly anonSets: Uint32Array[];
  readonly countrySets: Uint32Array[];
  readonly serviceSets: Uint32Array[];
  /** The rows whose entry is IPv4, and IPv6. */
  readonly ipvSets: Uint32Array[];
  /** AS number → ids of the networks with it (one per organisation the records name). */
  readonly asnNetworks: ReadonlyMap<number, readonly number[]>;
  /** The rows whose exit's flag is known and 0, and 1. */
  readonly hostingSets: Uint32Array[];
  readonly mobileSets: Uint32Array[];
  /** Longest city literal and ping text, bounding a row's rendered size. */
  readonly maxCityJson: number;
  /** Longest organisation literal. */
  readonly maxOrgJson: number;
  readonly maxPingText: number;
  /** Longest IPv6 exit text kept (0 when there is none), and longest ip_out JSON. */
  readonly maxExitV6: number;
  readonly maxIpOutJson: number;
  /** `"XX"` per country id, 4 bytes each. */
  readonly countryJson: Uint8Array;
  /** `XX` per country id at the same stride, two zero bytes after each. */
  readonly countryCsv: Uint8Array;
  /** Longest city and organisation as CSV fields. */
  readonly maxCityCsv: number;
  readonly maxOrgCsv: number;

  /** What it remembers of the snapshots before it; a store built alone remembers only its own. */
  readonly history: History;

  constructor(readonly c: StoreColumns, readonly meta: StoreMeta, readonly source: StoreSource, history?: History) {
    held++;
    collected.register(this, undefined);
    this.history = history ?? startHistory(c, meta, 1, source.loadedAtMs);
    this.rows = c.rows;
    this.words = c.typeBits.words;
    this.countryId = new Map(meta.countries.map((code, i) => [code, i]));
    this.serviceId = new Map(meta.services.map((name, i) => [name.toLowerCase(), i]));
    const cityIds = new Map<string, number[]>();
    meta.cities.forEach(({ ru, en }, id) => {
      for (const name of new Set([normalizeCity(ru), normalizeCity(en)])) {
        if (name === '') continue;
        const ids = cityIds.get(name);
        if (ids) ids.push(id);
        else cityIds.set(name, [id]);
      }
    });
    this.cityIds = cityIds;
    this.typeSets = TYPES.map((_, i) => member(c.typeBits, i));
    this.anonSets = ANONS.map((_, i) => member(c.anonBits, i));
    this.countrySets = meta.countries.map((_, i) => member(c.countryBits, i));
    this.serviceSets = meta.services.map((_, i) => member(c.serviceBits, i));
    this.ipvSets = [member(c.ipvBits, 0), member(c.ipvBits, 1)];
    const asnNetworks = new Map<number, number[]>();
    meta.networks.forEach(({ asn }, id) => {
      if (asn === 0) return;
      const ids = asnNetworks.get(asn);
      if (ids) ids.push(id);
      else asnNetworks.set(asn, [id]);
    });
    this.asnNetworks = asnNetworks;
    this.hostingSets = [member(c.hostingBits, 0), member(c.hostingBits, 1)];
    this.mobileSets = [member(c.mobileBits, 0), member(c.mobileBits, 1)];
    this.maxCityJson = Math.max(longest(c.cityJsonRu), longest(c.cityJsonEn));
    this.maxOrgJson = longest(c.networkOrgJson);
    this.maxPingText = meta.maxPingText;
    this.maxExitV6 = longest(c.exitV6Text);
    // An exit that is the row's IPv6 entry is as long as the entry's address, brackets taken off.
    this.maxIpOutJson = Math.max('"255.255.255.255"'.length, this.maxExitV6 + 2, meta.maxIpBytes);
    this.countryJson = utf8(meta.countries.map((code) => `"${code}"`).join(''));
    this.countryCsv = utf8(meta.countries.map((code) => `${code}\0\0`).join(''));
    this.maxCityCsv = Math.max(longest(c.cityCsvRu), longest(c.cityCsvEn));
    this.maxOrgCsv = longest(c.networkOrgCsv);
  }

  /** Rows checked at or after `minCheckedAt`: a prefix, since rows are freshest first. */
  prefixEnd(minCheckedAt: number): number {
    const { timeRank, times } = this.c;
    let lo = 0;
    let hi = this.rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (times[timeRank[mid]] >= minCheckedAt) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The highest rank of a ping of at most `maxPing` ms; -1 when every ping is above it. */
  pingRankAtMost(maxPing: number): number {
    const values = this.c.pingValues;
    let lo = 0;
    let hi = values.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (values[mid] <= maxPing) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }
}
