import { HOSTING, HOSTING_KNOWN, MOBILE, MOBILE_KNOWN, isV6Key, keyIp, keyPort, keyType } from '../store/columns.js';
import { normalizeCity, type Store } from '../store/store.js';
import type { VersionBatch } from '../store/versions.js';
import type { KeyPasses } from './changes.js';
import type { Plan } from './plan.js';

/** The moment of a cursor, as the filters of a plan see it. */
export interface Then {
  plan: Plan;
  /** The current store: the service names are those of every snapshot of its history. */
  store: Store;
  /** The cursor's snapshot. */
  seq: number;
  /** The earliest checked_at in the cursor's window. */
  minCheckedAt: number;
  keyPasses: KeyPasses;
}

/**
 * Which versions of `batch` were records of the cursor's list: the version
 * was the record of its key at the cursor's snapshot (it was first seen
 * there or before, and `batch` replaced it after), and every filter of the
 * plan lets it through at the cursor's second. The same filters as
 * execute.ts, on values instead of bitsets: a version's country and city
 * are ids of its own snapshot's dictionaries, matched by name.
 */
export function versionFilter(then: Then, batch: VersionBatch): (v: number) => boolean {
  const { plan, seq, minCheckedAt, keyPasses } = then;
  const anons = plan.anons && new Set(plan.anons);
  const include = plan.countryMode === 'include';
  const countries = plan.countries && new Set(plan.countries);
  const countryOk = countries && Uint8Array.from(batch.countries, (code) => Number(countries.has(code) === include));
  const cities = plan.cities && new Set(plan.cities.map(normalizeCity));
  const cityOk = cities && Uint8Array.from(batch.cities, ({ ru, en }) => Number(cities.has(normalizeCity(ru)) || cities.has(normalizeCity(en))));
  let services = 0;
  for (const name of plan.services ?? []) services |= 1 << then.store.serviceId.get(name.toLowerCase())!;
  const asns = plan.asns && new Set(plan.asns);
  const networkOk = asns && Uint8Array.from(batch.networks, ({ asn }) => Number(asns.has(asn)));
  // The flags a version must have: each filter's flag known, and set as asked.
  const flagMask = (plan.hosting === null ? 0 : HOSTING_KNOWN | HOSTING) | (plan.mobile === null ? 0 : MOBILE_KNOWN | MOBILE);
  const flagWant = (plan.hosting === null ? 0 : HOSTING_KNOWN | (plan.hosting * HOSTING)) | (plan.mobile === null ? 0 : MOBILE_KNOWN | (plan.mobile * MOBILE));
  const ping = plan.ping ?? Infinity;
  const works = plan.works ?? 0;
  const { key, from, checkedAt, anon, country, city, network, netFlags, ping: pings, works: worksOf, services: serviceBits } = batch;
  return (v) => {
    if (from[v] > seq || checkedAt[v] < minCheckedAt || pings[v] > ping || worksOf[v] < works) return false;
    if ((serviceBits[v] & services) !== services) return false;
    if (anons !== null && !anons.has(anon[v])) return false;
    if (countryOk !== null && countryOk[country[v]] === 0) return false;
    if (cityOk !== null && cityOk[city[v]] === 0) return false;
    if (networkOk !== null && networkOk[network[v]] === 0) return false;
    if ((netFlags[v] & flagMask) !== flagWant) return false;
    const k = key[v];
    return keyPasses(keyType(k), keyIp(k), keyPort(k), isV6Key(k) ? batch.v6 : null);
  };
}
