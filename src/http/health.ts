import { formatIsoOffset } from '../core/service-time.js';
import type { SnapshotFeed } from '../snapshot/snapshot-feed.js';

/** The /health document (API.md 1.6) and whether the service is ready. */
export function healthReport(feed: SnapshotFeed): { ready: boolean; body: string } {
  const reloads = { ok: feed.reloadsOk, failed: feed.reloadsFailed, last_error: feed.lastError };
  const store = feed.current;
  if (!store) return { ready: false, body: JSON.stringify({ status: 'loading', snapshot: null, reloads }) };
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
    }),
  };
}
