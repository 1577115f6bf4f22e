import { LRUCache } from 'lru-cache';
import { narrowable, planKey, type Plan } from '../query/plan.js';
import { narrowBody } from '../render/envelope.js';
import type { Store } from '../store/store.js';

/** A cached /api body, and what lets a narrower time window reuse it. */
export interface CachedBody {
  bytes: Uint8Array;
  /** Sent after `bytes`: the close of a JSON body narrowed to a view of a wider one. */
  tail: Uint8Array | null;
  /** The end of the time-window prefix the rows were selected from. */
  end: number;
  /** The selected rows, ascending; null where a narrower window cannot reuse the body (the envelope, encoded bodies). */
  rows: Uint32Array | null;
  /** Bare JSON and CSV: where each row's record ends in `bytes`. */
  ends: Uint32Array | null;
  /** The cache let go of it: what still holds it (a repeated answer, http/repeats.ts) must not use it again. */
  gone?: boolean;
}

/**
 * A JSON body narrowed from a wider one is a view of its bytes, then its
 * close: two writes to the socket, the close a packet of its own that the
 * client wakes up for. One up to this long is joined into one buffer
 * instead; beside a longer one, one more write is nothing.
 */
const JOINED_BYTES = 1024 * 1024;

/** How many of the ascending `rows` are below `end`. */
export function countBelow(rows: Uint32Array, end: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid] < end) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Whole /api bodies, bounded by bytes (rows and ends included), and the
 * policy of their reuse: which key a body has, when a cached body answers a
 * request, and which bodies are kept.
 *
 * Keys carry the store generation, so a swapped-in snapshot can never be
 * answered from an older one's bytes; the cache is also emptied on every
 * swap to free them at once. A body may take up to half of the cache: the
 * full dumps are the bodies most worth keeping.
 */
export class ResponseCache {
  private readonly lru: LRUCache<string, CachedBody> | null;
  /** The bare key of each plan remembered between requests (QueryMemo), for the store it was made for. */
  private readonly bareKeys = new WeakMap<Plan, { generation: number; key: string }>();

  constructor(maxBytes: number) {
    this.lru = maxBytes > 0
      ? new LRUCache<string, CachedBody>({
        maxSize: maxBytes,
        maxEntrySize: Math.max(1, Math.floor(maxBytes / 2)),
        // A narrowed entry's views keep their whole buffers alive: those are what it costs.
        sizeCalculation: (e) => Math.max(1, e.bytes.buffer.byteLength + (e.rows?.buffer.byteLength ?? 0) + (e.ends?.buffer.byteLength ?? 0)),
        dispose: (e) => {
          e.gone = true;
        },
      })
      : null;
  }

  get enabled(): boolean {
    return this.lru !== null;
  }

  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  /** The largest body kept; 0 with the cache off. */
  get maxEntryBytes(): number {
    return this.lru?.maxEntrySize ?? 0;
  }

  /**
   * The key of a plain body. Bodies in another order than the freshest
   * first, and counts, are kept per window; the envelope carries the time
   * to the second, so wrapped bodies are kept per window and second. The
   * others are kept per query, with the window they were selected from: as
   * time moves on, the window only narrows, and rows are freshest first, so
   * the answer for a narrower window is the cached rows below its end.
   */
  key(store: Store, plan: Plan, end: number, nowS: number): string {
    if (!narrowable(plan)) return `${store.source.generation}|${end}|${(plan.json && plan.wrap) || plan.since ? nowS : ''}|${planKey(plan)}`;
    let k = this.bareKeys.get(plan);
    if (k === undefined || k.generation !== store.source.generation) this.bareKeys.set(plan, (k = { generation: store.source.generation, key: `${store.source.generation}||${planKey(plan)}` }));
    return k.key;
  }

  /** The key of an encoded body: encoded bytes are never narrowed. */
  static encodedKey(key: string, end: number, encoding: string): string {
    return `${key}|${end}|${encoding}`;
  }

  /**
   * The body under `key` for the window ending at `end`: the cached one, or
   * a view of a wider window's, which is then kept in its place.
   */
  lookup(key: string, end: number, store: Store, plan: Plan): CachedBody | { bytes: Uint8Array; tail: Uint8Array | null } | undefined {
    const cached = this.lru?.get(key);
    if (!cached || (cached.end !== end && !(cached.rows && end < cached.end))) return undefined;
    if (cached.end === end) return cached;
    const k = countBelow(cached.rows!, end);
    if (k === cached.rows!.length) return cached;
    let narrowed = narrowBody(store, plan, { bytes: cached.bytes, rows: cached.rows!, ends: cached.ends }, k);
    const total = narrowed.bytes.length + (narrowed.tail?.length ?? 0);
    if (narrowed.tail && total <= Math.min(JOINED_BYTES, this.lru!.maxEntrySize)) {
      // Copied once here, for every request of the window that follows.
      const joined = new Uint8Array(Buffer.allocUnsafeSlow(total).buffer, 0, total);
      joined.set(narrowed.bytes);
      joined.set(narrowed.tail, narrowed.bytes.length);
      narrowed = { ...narrowed, bytes: joined, tail: null };
    }
    return this.offerEntry(key, { ...narrowed, end }, true) ?? narrowed;
  }

  /**
   * Keeps `entry` if it fits, copying its bytes unless `owned` (they are the
   * caller's to give); returns the bytes kept (or undefined). Owned views
   * that use less than half of their buffers are compacted, so a body
   * narrowed again and again never keeps more than twice its size.
   */
  offer(key: string, entry: CachedBody, owned: boolean): Uint8Array | undefined {
    return this.offerEntry(key, entry, owned)?.bytes;
  }

  /** As `offer`, returning the entry kept. */
  offerEntry(key: string, entry: CachedBody, owned: boolean): CachedBody | undefined {
    if (!this.lru || entry.bytes.length > this.lru.maxEntrySize) return undefined;
    const stored: CachedBody = owned
      ? { ...entry, bytes: compact(entry.bytes), rows: entry.rows && compact(entry.rows), ends: entry.ends && compact(entry.ends) }
      : { ...entry, bytes: entry.bytes.slice() };
    this.lru.set(key, stored);
    return this.lru.has(key) ? stored : undefined;
  }

  clear(): void {
    this.lru?.clear();
  }
}

function compact<T extends Uint8Array | Uint32Array>(view: T): T {
  return view.byteLength * 2 < view.buffer.byteLength ? (view.slice() as T) : view;
}
