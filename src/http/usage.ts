import type { KeyTable } from '../access/keys.js';
import type { Limiter } from '../access/limiter.js';
import { civilFromDays, serviceDay } from '../core/service-time.js';

/**
 * The /usage document (docs/several-instances.md): every key in force with
 * its usage of the service day, from the limiter in use (with Redis, every
 * instance's). A key shows as the first 8 hex of its SHA-256, never itself.
 */
export async function usageReport(table: KeyTable, limiter: Limiter, kind: 'memory' | 'redis', nowMs: number): Promise<string> {
  const entries = [...table.values()];
  const usage = await limiter.usage(entries, nowMs);
  const { y, m, d } = civilFromDays(serviceDay(nowMs));
  const day = `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
  const keys = entries.map((e) => {
    const u = usage.get(e.id)!;
    const l = e.limits;
    return {
      id: e.id.slice(0, 8),
      name: e.name,
      today: u.today,
      subnets: u.subnets,
      limits: { per_window: l.perWindow, window_s: l.perWindow === null ? null : l.windowS, daily: l.daily, subnets: l.subnets },
    };
  });
  return JSON.stringify({ day, limiter: kind, keys });
}
