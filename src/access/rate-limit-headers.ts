import type { KeyEntry } from './keys.js';
import type { Allowance } from './limiter.js';

/**
 * The IETF draft's RateLimit-Policy and RateLimit fields: `window` for the
 * frequency limit, `day` for the daily one; an unlimited one is left out.
 *   RateLimit-Policy: "window";q=2;w=5, "day";q=34560;w=86400
 *   RateLimit: "window";r=1;t=5, "day";r=34559;t=41234
 * r is what is left; t the seconds until all of it is back (the window) or
 * until the count resets at 00:00 UTC+02:00 (the day).
 */
const policies = new WeakMap<KeyEntry, string>();

function policyOf(key: KeyEntry): string {
  let p = policies.get(key);
  if (p === undefined) {
    const items: string[] = [];
    if (key.limits.perWindow !== null && key.limits.windowS !== null) items.push(`"window";q=${key.limits.perWindow};w=${key.limits.windowS}`);
    if (key.limits.daily !== null) items.push(`"day";q=${key.limits.daily};w=86400`);
    policies.set(key, (p = items.join(', ')));
  }
  return p;
}

/** Whether answers for `key` carry RateLimit fields: it has a frequency or a daily limit. */
export const hasRateFields = (key: KeyEntry): boolean => (key.limits.perWindow !== null && key.limits.windowS !== null) || key.limits.daily !== null;

export function rateLimitHeaders(key: KeyEntry, a: Allowance): Array<[string, string]> {
  const policy = policyOf(key);
  if (policy === '') return [];
  const items: string[] = [];
  if (a.window && key.limits.windowS !== null) items.push(`"window";r=${a.window.remaining};t=${a.window.resetS}`);
  if (key.limits.daily !== null) items.push(`"day";r=${a.daily.remaining};t=${a.daily.resetS}`);
  return [['RateLimit-Policy', policy], ['RateLimit', items.join(', ')]];
}
