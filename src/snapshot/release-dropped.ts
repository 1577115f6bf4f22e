import { fullCollection } from '../core/full-collection.js';

/**
 * A store that was swapped out is let go of when the last request reading it
 * finishes, but its memory (outside the JavaScript heap) goes back only when
 * a full collection finds it unreachable, and nothing in a quiet heap starts
 * one. Left alone, the store before the last one may still be held when the
 * next build reaches its peak: three stores at once instead of two. So the
 * load after a swap starts with one full collection, a reload interval
 * after that swap, when the stores no request holds any more can go.
 */
export function releaseDroppedStores(): void {
  fullCollection();
}
