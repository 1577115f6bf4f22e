import type { KeysInForce } from '../access/keys-feed.js';
import { formatIsoOffset } from '../core/service-time.js';
import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import type { Lifecycle } from './lifecycle.js';

/**
 * The /health document for anyone (docs/operations.md, Health): the status
 * and the snapshot's time, with the same status code as the whole one. It
 * names no file, key count, certificate or error, and is made from this
 * thread's own state, at once: an answer that comes later would end a
 * connection with requests pipelined behind it (docs/operations.md, What
 * each build answers).
 */
export function publicHealth(feed: StoreFeed, life: Lifecycle): { ready: boolean; body: string } {
  const store = feed.current;
  const status = life.draining ? 'draining' : store ? 'ok' : 'loading';
  const snapshot = store ? { generated_at: formatIsoOffset(store.meta.generatedAt * 1000) } : null;
  return { ready: status === 'ok', body: JSON.stringify({ status, snapshot }) };
}

/** The whole /health document (docs/operations.md; docs/several-instances.md), for the addresses of --metrics-allow, and whether the service takes requests. */
/** `everyThreadUp`: whether the other serving threads' Redis limiters are up too (each has a connection of its own). */
export function healthReport(feed: StoreFeed, keys: KeysInForce, life: Lifecycle, threads: number, everyThreadUp = true): { ready: boolean; body: string } {
  const reloads = { ok: feed.reloadsOk, failed: feed.reloadsFailed, last_error: feed.lastError };
  const redis = life.limiter;
  const o = life.origin;
  // The keys in force, and what the snapshot origin and a shared limiter say, when there are any (docs/several-instances.md).
  const keysError = keys.lastError ?? life.keysOrigin?.lastError ?? null;
  const extra = {
    engine: life.engine.name,
    // The native build that serves, as an operator pins it (--uws-sha256); null on Node's own http.
    engine_build: life.engine.native,
    threads,
    keys: { source: keys.source, loaded_at: keys.loadedAtMs === null ? null : formatIsoOffset(keys.loadedAtMs), count: keys.table.size, last_error: keysError },
    ...(o ? { origin: { url: o.url, downloads: o.downloads, not_modified: o.notModified, last_error: o.lastError } } : {}),
    ...(life.tls
      ? { tls: { subject: life.tls.current.subject, not_after: formatIsoOffset(life.tls.current.notAfterMs), loaded_at: formatIsoOffset(life.tls.loadedAtMs), last_error: life.tls.lastError } }
      : {}),
    ...(redis ? { limiter: { kind: 'redis', mode: redis.mode, nodes: redis.nodes, up: redis.up && everyThreadUp, fallback: redis.fallbacks, last_error: redis.lastError } } : {}),
  };
  const store = feed.current;
  if (life.draining) return { ready: false, body: JSON.stringify({ status: 'draining', ...extra }) };
  if (!store) return { ready: false, body: JSON.stringify({ status: 'loading', snapshot: null, reloads, ...extra }) };
  return {
    ready: true,
    body: JSON.stringify({
      status: 'ok',
      snapshot: {
        generated_at: formatIsoOffset(store.meta.generatedAt * 1000),
        loaded_at: formatIsoOffset(store.source.loadedAtMs),
        records: store.rows,
        ipv6_entries: store.meta.ipv6Entries,
        ipv6_exits: store.meta.ipv6Exits,
        skipped: store.meta.skipped,
        skip_reasons: store.meta.skipCounts,
        file: store.source.file,
        // Where exits the checker did not place were looked up, and how many it placed.
        asn_database: store.meta.asnDatabase ? { name: store.meta.asnDatabase.name, date: store.meta.asnDatabase.date, records: store.meta.asnDatabase.filled } : null,
      },
      reloads,
      ...extra,
    }),
  };
}
