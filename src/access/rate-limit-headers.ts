import type { KeyEntry, Limits } from './keys.js';
import type { Allowance } from './limiter.js';

/**
 * The IETF draft's RateLimit-Policy and RateLimit fields: `window` for the
 * frequency limit, `day` for the daily one; an unlimited one is left out.
 *   RateLimit-Policy: "window";q=2;w=5, "day";q=34560;w=86400
 *   RateLimit: "window";r=1;t=5, "day";r=34559;t=41234
 * r is what is left; t the seconds until all of it is back (the window) or
 * until the count resets at 00:00 UTC+02:00 (the day).
 */
export const RATE_POLICY_NAME = 'RateLimit-Policy';
export const RATE_NAME = 'RateLimit';

/** The two fields' values for one answer: the policy is the key's limits', made once per set of limits. */
export interface RateFields {
  readonly policy: string;
  readonly value: string;
}

const policies = new WeakMap<Limits, string>();

function policyOf(limits: Limits): string {
  let p = policies.get(limits);
  if (p === undefined) {
    const items: string[] = [];
    if (limits.perWindow !== null && limits.windowS !== null) items.push(`"window";q=${limits.perWindow};w=${limits.windowS}`);
    if (limits.daily !== null) items.push(`"day";q=${limits.daily};w=86400`);
    policies.set(limits, (p = items.join(', ')));
  }
  return p;
}

/** Whether answers for `key` carry RateLimit fields: it has a frequency or a daily limit. */
export const hasRateFields = (key: KeyEntry): boolean => (key.limits.perWindow !== null && key.limits.windowS !== null) || key.limits.daily !== null;

/** The fields for `key` with `a` left, or null for a key without limits. */
export function rateFields(key: KeyEntry, a: Allowance): RateFields | null {
  const limits = key.limits;
  const policy = policyOf(limits);
  if (policy === '') return null;
  const window = a.window !== null && limits.windowS !== null ? `"window";r=${a.window.remaining};t=${a.window.resetS}` : '';
  const value = limits.daily === null ? window : `${window === '' ? '' : window + ', '}"day";r=${a.daily.remaining};t=${a.daily.resetS}`;
  return { policy, value };
}
