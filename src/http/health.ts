import { formatIsoOffset } from '../core/service-time.js';
import type { SnapshotFeed } from '../snapshot/snapshot-feed.js';
import type { Lifecycle } from './lifecycle.js';

/** The /health document (API.md 1.6, 6.1, 6.3) and whether the service takes requests. */
export function healthReport(feed: SnapshotFeed, life: Lifecycle): { ready: boolean; body: string } {
  const reloads = { ok: feed.reloadsOk, failed: feed.reloadsFailed, last_error: feed.lastError };
  const redis = life.limiter;
  const limiter = redis ? { limiter: { kind: 'redis', up: redis.up, fallback: redis.fallbacks, last_error: redis.lastError } } : {};
  const store = feed.current;
  if (life.draining) return { ready: false, body: JSON.stringify({ status: 'draining', ...limiter }) };
  if (!store) return { ready: false, body: JSON.stringify({ status: 'loading', snapshot: null, reloads, ...limiter }) };
  return {
    ready: true,
    body: JSON.stringify({
      status: 'ok',
      snapshot: {
        generated_at: formatIsoOffset(store.meta.generatedAt * 1000),
        loaded_at: formatIsoOffset(store.source.loadedAtMs),
        records: store.rows,
        skipped: store.meta.skipped,
        file: store.source.file,
      },
      reloads,
      ...limiter,
    }),
  };
}
