import { LRUCache } from 'lru-cache';

/** A cached /api body, and what lets a narrower time window reuse it. */
export interface CachedBody {
  bytes: Uint8Array;
  /** Sent after `bytes`: the close of a JSON body narrowed to a view of a wider one. */
  tail: Uint8Array | null;
  /** The end of the time-window prefix the rows were selected from. */
  end: number;
  /** The selected rows, ascending; null where a narrower window cannot reuse the body (the envelope). */
  rows: Uint32Array | null;
  /** Bare JSON: where each row's record ends in `bytes`. */
  ends: Uint32Array | null;
}

/**
 * Whole /api bodies, bounded by bytes (rows and ends included). The key
 * carries the store generation, so a swapped-in snapshot can never be
 * answered from an older one's bytes; the cache is also emptied on every
 * swap to free them at once. A body may take up to half of the cache: the
 * full dumps are the bodies most worth keeping.
 */
export class ResponseCache {
  hits = 0;
  misses = 0;
  private readonly lru: LRUCache<string, CachedBody> | null;

  constructor(maxBytes: number) {
    this.lru = maxBytes > 0
      ? new LRUCache<string, CachedBody>({
        maxSize: maxBytes,
        maxEntrySize: Math.max(1, Math.floor(maxBytes / 2)),
        // A narrowed entry's views keep their whole buffers alive: those are what it costs.
        sizeCalculation: (e) => Math.max(1, e.bytes.buffer.byteLength + (e.rows?.buffer.byteLength ?? 0) + (e.ends?.buffer.byteLength ?? 0)),
      })
      : null;
  }

  get enabled(): boolean {
    return this.lru !== null;
  }

  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  get(key: string): CachedBody | undefined {
    const entry = this.lru?.get(key);
    if (entry) this.hits++;
    else this.misses++;
    return entry;
  }

  /**
   * Stores `entry` if it fits, copying its bytes unless `owned` (they are the
   * caller's to give); returns the bytes to send (the stored ones, or undefined).
   * Owned views that use less than half of their buffers are compacted, so a
   * body narrowed again and again never keeps more than twice its size.
   */
  put(key: string, entry: CachedBody, owned: boolean): Uint8Array | undefined {
    if (!this.lru || entry.bytes.length > this.lru.maxEntrySize) return undefined;
    const stored = owned
      ? { ...entry, bytes: compact(entry.bytes), rows: entry.rows && compact(entry.rows), ends: entry.ends && compact(entry.ends) }
      : { ...entry, bytes: entry.bytes.slice() };
    this.lru.set(key, stored);
    return this.lru.has(key) ? stored.bytes : undefined;
  }

  clear(): void {
    this.lru?.clear();
  }
}

function compact<T extends Uint8Array | Uint32Array>(view: T): T {
  return view.byteLength * 2 < view.buffer.byteLength ? (view.slice() as T) : view;
}
