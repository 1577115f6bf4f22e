import { LRUCache } from 'lru-cache';

/**
 * Whole /api bodies, bounded by bytes. The key carries the store generation,
 * so a swapped-in snapshot can never be answered from an older one's bytes;
 * the cache is also emptied on every swap to free them at once.
 */
export class ResponseCache {
  hits = 0;
  misses = 0;
  private readonly lru: LRUCache<string, Uint8Array> | null;

  constructor(maxBytes: number) {
    this.lru = maxBytes > 0
      ? new LRUCache<string, Uint8Array>({ maxSize: maxBytes, maxEntrySize: Math.max(1, Math.floor(maxBytes / 8)), sizeCalculation: (body) => Math.max(1, body.length) })
      : null;
  }

  get enabled(): boolean {
    return this.lru !== null;
  }

  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }

  get(key: string): Uint8Array | undefined {
    const body = this.lru?.get(key);
    if (body) this.hits++;
    else this.misses++;
    return body;
  }

  /** Stores a copy of `body` if it fits; returns the bytes to send (the copy, or undefined). */
  put(key: string, body: Uint8Array): Uint8Array | undefined {
    if (!this.lru || body.length > this.lru.maxEntrySize) return undefined;
    const copy = body.slice();
    this.lru.set(key, copy);
    return copy;
  }

  clear(): void {
    this.lru?.clear();
  }
}
