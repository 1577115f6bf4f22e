import { msUntilNextServiceMidnight, serviceDay } from '../core/service-time.js';
import type { KeyEntry } from './keys.js';
import { R_COUNT, R_DAY, R_NEXT, R_RING, R_SUBNETS, SharedUsage, idWords } from './shared-usage.js';

/** Why a usage limit refused a request; http/failures.ts says it to the client. */
export type LimitReason =
  | { limit: 'subnet'; subnets: number; subnet: number }
  | { limit: 'frequency'; perWindow: number; windowS: number | null }
  | { limit: 'daily'; daily: number }
  | { limit: 'unavailable' };

export type Refusal = {
  ok: false;
  reason: LimitReason;
  /** Whole seconds until the request may succeed, at least 1. */
  retryAfterS: number;
  /** What the key has left, when the limiter that decided knows it better than `allowance()`. */
  allowance?: Allowance | null;
};
export type Verdict = { ok: true; allowance?: Allowance | null } | Refusal;

/** What a key has left, for the RateLimit response header; null where unlimited. */
export interface Allowance {
  window: { limit: number; windowS: number; remaining: number; resetS: number } | null;
  daily: { limit: number; remaining: number; resetS: number };
}

/** The part of usage that survives a restart: daily counts and subnets seen, for one service day. */
export interface DailyState {
  day: number;
  keys: Record<string, { count: number; subnets: number[] }>;
}

/**
 * The usage limits (docs/api.md, Usage limits), per key: in this process's memory, or
 * shared by several instances in Redis (docs/several-instances.md). An admission is
 * decided at once when the limiter can (always in memory), or later, after
 * a round trip.
 */
/** A key's usage of the current day; null where the limiter does not count it. */
export interface UsageToday {
  today: number | null;
  subnets: number | null;
}

export interface Limiter {
  /** The limit checks of the errors of docs/api.md: subnet, frequency, daily; counts the request only if all pass. */
  admit(key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict | Promise<Verdict>;
  /** What the key has left, for verdicts that do not carry it; null when not known. */
  allowance(key: KeyEntry, nowMs: number, monoMs: number): Allowance | null;
  /** The usage of the day of each of `keys`, by key id (GET /usage); rejects when the shared state cannot be read now. */
  usage(keys: readonly KeyEntry[], nowMs: number): Promise<Map<string, UsageToday>>;
}

/**
 * Whole seconds to cover `ms`, a difference of fractional clock reads: its
 * float error (5000.000000000015 for 5 s) is dropped to the whole
 * millisecond first, or a 5-second window would say 6.
 */
export const secondsToCover = (ms: number): number => Math.ceil(Math.round(ms) / 1000);
const ceilS = (ms: number): number => Math.max(1, secondsToCover(ms));

/** A refusal for `reason`, `retryMs` until the client may succeed. */
export const refusal = (reason: LimitReason, retryMs: number): Refusal => ({ ok: false, reason, retryAfterS: ceilS(retryMs) });
/** An admission that says nothing more: shared, never changed. */
const OK: Verdict = Object.freeze({ ok: true });
export const UNAVAILABLE: Refusal = { ok: false, reason: { limit: 'unavailable' }, retryAfterS: 1 };

/**
 * Exact limits kept in memory, shared by every thread of the process
 * (access/shared-usage.ts). The frequency limit keeps the times of the
 * last `per_window` accepted requests (a fixed window would let 4 through
 * around a boundary, GCRA 3), on the monotonic clock; days use the wall clock
 * in UTC+02:00. State exists only for keys that were valid when used.
 */
export class MemoryLimiter implements Limiter {
  readonly table: SharedUsage;

  /** A new table, or this thread's view of the one another thread made. */
  constructor(shared?: SharedArrayBuffer) {
    this.table = new SharedUsage(shared);
  }

  /** Room for `keys` keys in the table (SharedUsage.reserve). */
  reserve(keys: number): void {
    this.table.locked(() => this.table.reserve(keys));
  }

  get trackedKeys(): number {
    return this.table.entries;
  }

  /** Changes of what exportDay returns so far, by every thread. */
  get changes(): number {
    return this.table.changes;
  }

  /**
   * The record of `key`, rolled over to today, with room for its window and
   * for `subnets` subnets: a record starts with room for one, and grows (it
   * moves) for a key used from more (most keys are used from one). Under the lock.
   */
  private usageOf(key: KeyEntry, nowMs: number, subnets = Math.min(key.limits.subnets ?? 0, 1)): number {
    const r = this.table.record(key.digest, key.digestAt, { ring: key.limits.perWindow ?? 0, subnets }, key.hints ?? null, key.hintAt ?? 0);
    const f = this.table.words;
    const today = serviceDay(nowMs);
    if (f[r + R_DAY] !== today) {
      f[r + R_DAY] = today;
      f[r + R_COUNT] = 0;
      f[r + R_SUBNETS] = 0;
    }
    return r;
  }

  /** Keeps the ring at `size` slots, holding on to the most recent times. Under the lock. */
  private fit(r: number, size: number): void {
    const f = this.table.words;
    const length = f[r + R_RING];
    if (length === size) return;
    const at = this.table.ringAt(r);
    if (length === 0) {
      // A key's first request: nothing to keep, and nothing made for it.
      f.fill(-Infinity, at, at + size);
      f[r + R_RING] = size;
      f[r + R_NEXT] = 0;
      return;
    }
    const next = f[r + R_NEXT];
    const ordered = [...f.subarray(at + next, at + length), ...f.subarray(at, at + next)];
    const keep = ordered.slice(Math.max(0, ordered.length - size));
    f.fill(-Infinity, at, at + size - keep.length);
    f.set(keep, at + size - keep.length);
    f[r + R_RING] = size;
    f[r + R_NEXT] = 0;
  }

  /** The verdict, with what the key has left after it (read in the same lock). */
  admit(key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict {
    // Every request comes here: the lock is taken without a closure.
    this.table.lock();
    try {
      let r = this.usageOf(key, nowMs);
      const limit = key.limits.subnets;
      if (limit !== null) {
        // Room for one more subnet, if it is a new one within the limit.
        const f = this.table.words;
        const seen = this.table.subnetsAt(r);
        const count = f[r + R_SUBNETS];
        let known = false;
        for (let i = 0; i < count && !known; i++) known = f[seen + i] === subnet;
        if (!known && count < limit && count >= this.table.subnetRoom(r)) r = this.usageOf(key, nowMs, Math.min(limit, count * 2));
      }
      const verdict = this.admitLocked(r, key, subnet, nowMs, monoMs);
      if (key.limits.perWindow === null && key.limits.daily === null) return verdict;
      const allowance = this.allowanceLocked(r, key, nowMs, monoMs);
      return verdict.ok ? { ok: true, allowance } : { ...verdict, allowance };
    } finally {
      this.table.unlock();
    }
  }

  private admitLocked(r: number, key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict {
    const f = this.table.words;
    const { perWindow, windowS, daily, subnets } = key.limits;
    const seen = this.table.subnetsAt(r);
    const seenCount = f[r + R_SUBNETS];
    let newSubnet = subnets !== null;
    for (let i = 0; newSubnet && i < seenCount; i++) if (f[seen + i] === subnet) newSubnet = false;
    if (newSubnet && seenCount >= subnets!) return refusal({ limit: 'subnet', subnets: subnets!, subnet }, msUntilNextServiceMidnight(nowMs));
    const ring = this.table.ringAt(r);
    if (perWindow !== null) {
      this.fit(r, perWindow);
      const oldest = f[ring + f[r + R_NEXT]];
      const windowMs = (windowS ?? 0) * 1000;
      if (monoMs - oldest < windowMs) return refusal({ limit: 'frequency', perWindow, windowS }, oldest + windowMs - monoMs);
    }
    if (daily !== null && f[r + R_COUNT] >= daily) return refusal({ limit: 'daily', daily }, msUntilNextServiceMidnight(nowMs));
    f[r + R_COUNT]++;
    if (perWindow !== null) {
      f[ring + f[r + R_NEXT]] = monoMs;
      f[r + R_NEXT] = (f[r + R_NEXT] + 1) % perWindow;
    }
    if (newSubnet) f[seen + f[r + R_SUBNETS]++] = subnet;
    this.table.changed();
    return OK;
  }

  /** The counts of every thread; subnets are kept only for keys with a subnet limit. */
  async usage(keys: readonly KeyEntry[], nowMs: number): Promise<Map<string, UsageToday>> {
    const today = serviceDay(nowMs);
    return this.table.locked(() => {
      const f = this.table.words;
      const out = new Map<string, UsageToday>();
      for (const key of keys) {
        const r = this.table.find(key.digest, key.digestAt);
        const current = r !== 0 && f[r + R_DAY] === today;
        out.set(key.id, { today: current ? f[r + R_COUNT] : 0, subnets: key.limits.subnets === null ? null : current ? f[r + R_SUBNETS] : 0 });
      }
      return out;
    });
  }

  allowance(key: KeyEntry, nowMs: number, monoMs: number): Allowance {
    return this.table.locked(() => this.allowanceLocked(this.usageOf(key, nowMs), key, nowMs, monoMs));
  }

  /** What the key of record `r` has left. Under the lock. */
  private allowanceLocked(r: number, key: KeyEntry, nowMs: number, monoMs: number): Allowance {
    const f = this.table.words;
    const { perWindow, windowS, daily } = key.limits;
    let window: Allowance['window'] = null;
    if (perWindow !== null) {
      this.fit(r, perWindow);
      const windowMs = (windowS ?? 0) * 1000;
      let used = 0;
      let newest = -Infinity;
      const ring = this.table.ringAt(r);
      for (let i = 0; i < perWindow; i++) {
        const t = f[ring + i];
        if (monoMs - t < windowMs) used++;
        if (t > newest) newest = t;
      }
      window = { limit: perWindow, windowS: windowS ?? 0, remaining: perWindow - used, resetS: used === 0 ? 0 : secondsToCover(newest + windowMs - monoMs) };
    }
    const resetS = secondsToCover(msUntilNextServiceMidnight(nowMs));
    const count = f[r + R_COUNT];
    return { window, daily: { limit: daily ?? Infinity, remaining: daily === null ? Infinity : Math.max(0, daily - count), resetS } };
  }

  exportDay(nowMs: number): DailyState {
    const day = serviceDay(nowMs);
    const keys: DailyState['keys'] = {};
    this.table.locked(() => {
      const f = this.table.words;
      for (const [id, r] of this.table.all()) {
        const seen = this.table.subnetsAt(r);
        if (f[r + R_DAY] === day && (f[r + R_COUNT] > 0 || f[r + R_SUBNETS] > 0)) keys[id] = { count: f[r + R_COUNT], subnets: Array.from(f.subarray(seen, seen + f[r + R_SUBNETS])) };
      }
    });
    return { day, keys };
  }

  /** Takes saved counts if they are of today's service day; returns whether it did. */
  importDay(state: DailyState, nowMs: number): boolean {
    const day = serviceDay(nowMs);
    if (state.day !== day) return false;
    this.table.locked(() => {
      for (const [id, saved] of Object.entries(state.keys)) {
        const r = this.table.record(idWords(id), 0, { ring: 0, subnets: saved.subnets.length });
        const f = this.table.words;
        f[r + R_DAY] = day;
        f[r + R_COUNT] = saved.count;
        f[r + R_SUBNETS] = saved.subnets.length;
        f.set(saved.subnets, this.table.subnetsAt(r));
      }
    });
    return true;
  }

  /** Drops what no longer matters: usage of an earlier day whose windows have passed. */
  prune(nowMs: number, monoMs: number, longestWindowMs: number): void {
    const day = serviceDay(nowMs);
    this.table.locked(() => {
      const f = this.table.words;
      this.table.remove((r) => {
        let newest = -Infinity;
        const ring = this.table.ringAt(r);
        for (let i = 0; i < f[r + R_RING]; i++) if (f[ring + i] > newest) newest = f[ring + i];
        return f[r + R_DAY] !== day && monoMs - newest >= longestWindowMs;
      });
    });
  }
}
