import type { KeyEntry } from '../../src/access/keys.js';
import { refusal, secondsToCover, type Allowance, type DailyState, type Limiter, type UsageToday, type Verdict } from '../../src/access/limiter.js';
import { msUntilNextServiceMidnight, serviceDay } from '../../src/core/service-time.js';

const OK: Verdict = { ok: true };

/** One key's usage. A few hundred bytes with the default limits. */
class KeyUsage {
  day = -1;
  count = 0;
  /** Subnets seen today; not kept at all when the key's subnet limit is null. */
  subnets: number[] = [];
  /** Monotonic times of the last `per_window` accepted requests, a ring; `next` is the oldest slot. */
  stamps = new Float64Array(0);
  next = 0;

  rollover(today: number): void {
    if (this.day === today) return;
    this.day = today;
    this.count = 0;
    this.subnets = [];
  }

  /** Keeps the ring at `size` slots, holding on to the most recent stamps. */
  fit(size: number): void {
    if (this.stamps.length === size) return;
    const ordered = [...this.stamps.subarray(this.next), ...this.stamps.subarray(0, this.next)];
    const ring = new Float64Array(size).fill(-Infinity);
    const keep = ordered.slice(Math.max(0, ordered.length - size));
    ring.set(keep, size - keep.length);
    this.stamps = ring;
    this.next = 0;
  }
}

/**
 * The limits of docs/api.md kept the plain way, per key in a Map, in one
 * thread: the reference that the shared limiter (access/limiter.ts) must
 * agree with, verdict for verdict.
 */
export class NaiveLimiter implements Limiter {
  private readonly byKey = new Map<string, KeyUsage>();

  get trackedKeys(): number {
    return this.byKey.size;
  }

  private usageOf(key: KeyEntry, nowMs: number): KeyUsage {
    let u = this.byKey.get(key.id);
    if (!u) this.byKey.set(key.id, (u = new KeyUsage()));
    u.rollover(serviceDay(nowMs));
    return u;
  }

  admit(key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict {
    const u = this.usageOf(key, nowMs);
    const { perWindow, windowS, daily, subnets } = key.limits;
    const newSubnet = subnets !== null && !u.subnets.includes(subnet);
    if (newSubnet && u.subnets.length >= subnets) return refusal({ limit: 'subnet', subnets, subnet }, msUntilNextServiceMidnight(nowMs));
    if (perWindow !== null) {
      u.fit(perWindow);
      const oldest = u.stamps[u.next];
      const windowMs = (windowS ?? 0) * 1000;
      if (monoMs - oldest < windowMs) return refusal({ limit: 'frequency', perWindow, windowS }, oldest + windowMs - monoMs);
    }
    if (daily !== null && u.count >= daily) return refusal({ limit: 'daily', daily }, msUntilNextServiceMidnight(nowMs));
    u.count++;
    if (perWindow !== null) {
      u.stamps[u.next] = monoMs;
      u.next = (u.next + 1) % perWindow;
    }
    if (newSubnet) u.subnets.push(subnet);
    return OK;
  }

  /** This instance's counts; subnets are kept only for keys with a subnet limit. */
  async usage(keys: readonly KeyEntry[], nowMs: number): Promise<Map<string, UsageToday>> {
    const today = serviceDay(nowMs);
    const out = new Map<string, UsageToday>();
    for (const key of keys) {
      const u = this.byKey.get(key.id);
      const current = u !== undefined && u.day === today;
      out.set(key.id, { today: current ? u.count : 0, subnets: key.limits.subnets === null ? null : current ? u.subnets.length : 0 });
    }
    return out;
  }

  allowance(key: KeyEntry, nowMs: number, monoMs: number): Allowance {
    const u = this.usageOf(key, nowMs);
    const { perWindow, windowS, daily } = key.limits;
    let window: Allowance['window'] = null;
    if (perWindow !== null) {
      u.fit(perWindow);
      const windowMs = (windowS ?? 0) * 1000;
      let used = 0;
      let newest = -Infinity;
      for (const t of u.stamps) {
        if (monoMs - t < windowMs) used++;
        if (t > newest) newest = t;
      }
      window = { limit: perWindow, windowS: windowS ?? 0, remaining: perWindow - used, resetS: used === 0 ? 0 : secondsToCover(newest + windowMs - monoMs) };
    }
    const resetS = secondsToCover(msUntilNextServiceMidnight(nowMs));
    return { window, daily: { limit: daily ?? Infinity, remaining: daily === null ? Infinity : Math.max(0, daily - u.count), resetS } };
  }

  exportDay(nowMs: number): DailyState {
    const day = serviceDay(nowMs);
    const keys: DailyState['keys'] = {};
    for (const [id, u] of this.byKey) {
      if (u.day === day && (u.count > 0 || u.subnets.length > 0)) keys[id] = { count: u.count, subnets: [...u.subnets] };
    }
    return { day, keys };
  }

  /** Takes saved counts if they are of today's service day; returns whether it did. */
  importDay(state: DailyState, nowMs: number): boolean {
    const day = serviceDay(nowMs);
    if (state.day !== day) return false;
    for (const [id, saved] of Object.entries(state.keys)) {
      let u = this.byKey.get(id);
      if (!u) this.byKey.set(id, (u = new KeyUsage()));
      u.day = day;
      u.count = saved.count;
      u.subnets = [...saved.subnets];
    }
    return true;
  }

  /** Drops what no longer matters: usage of an earlier day whose windows have passed. */
  prune(nowMs: number, monoMs: number, longestWindowMs: number): void {
    const day = serviceDay(nowMs);
    for (const [id, u] of this.byKey) {
      let newest = -Infinity;
      for (const t of u.stamps) if (t > newest) newest = t;
      if (u.day !== day && monoMs - newest >= longestWindowMs) this.byKey.delete(id);
    }
  }
}
