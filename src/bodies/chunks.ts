import type { BodyMemory } from './body-memory.js';

/** A chunk of a body (or for a body kept whole, the chunks rendered from one on) and the readers sending it. */
export interface Chunk {
  index: number;
  /** How many chunks its bytes hold. */
  span: number;
  bytes: Uint8Array;
  holders: number;
  /** The pooled buffer its bytes are in; null for a view of a body kept whole. */
  pooled: Uint8Array | null;
  /** Bytes of the budget it holds: those of a chunk kept in the ring. */
  budgeted: number;
}

/** How a body is cut into chunks, and how one is rendered. */
export interface ChunkRenderer {
  readonly count: number;
  /** The rows of chunk i. */
  rowsOf(i: number): [number, number];
  /**
   * Renders chunk i into the event loop's render buffer (the view is good
   * until the next render); with `ends`, where each of its records ends, from
   * the chunk's start.
   */
  render(i: number, ends: Uint32Array | null): Uint8Array;
}

/** Where a production's readers take their chunks from. */
export interface ChunkSource {
  /** Chunk `i` for a reader (counted as one of its holders until `drop`), or null past the last. */
  take(i: number): Chunk | null;
  drop(c: Chunk): void;
  /** No reader holds anything: the memory goes back (a body kept whole's buffer as the spare for the next). */
  release(): void;
}

/**
 * A body kept whole while it is read: rendered once, in order, a chunk at a
 * time when the first reader needs it, into one buffer claimed from the
 * budget that every reader reads, whenever it joined.
 */
export class WholeBody implements ChunkSource {
  private produced = 0;
  private readonly chunkStart: number[] = [0];
  /** The claimed buffer, while the budget counts it here. */
  private claimed: Uint8Array | null;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly chunks: ChunkRenderer,
    private readonly memory: BodyMemory,
    /** Where each record ends in the body, for a body the response cache may keep (bare JSON). */
    private readonly ends: Uint32Array | null,
    /** The body is complete; true when its buffer is now another's to count (the response cache's). */
    private readonly complete: (bytes: Uint8Array, ends: Uint32Array | null) => boolean,
  ) {
    this.claimed = bytes;
  }

  take(i: number): Chunk | null {
    if (i >= this.chunks.count) return null;
    while (this.produced <= i) this.renderNext();
    // Everything rendered so far in one piece: the socket takes as much of it as it can.
    return { index: i, span: this.produced - i, bytes: this.bytes.subarray(this.chunkStart[i], this.chunkStart[this.produced]), holders: 1, pooled: null, budgeted: 0 };
  }

  drop(): void {
    // A view of the whole buffer: nothing of its own to give back.
  }

  release(): void {
    if (this.claimed) this.memory.unclaim(this.claimed, true);
    this.claimed = null;
  }

  private renderNext(): void {
    const at = this.chunkStart[this.produced];
    const bytes = this.chunks.render(this.produced, this.ends);
    if (at + bytes.length > this.bytes.length) throw new Error(`a body rendered past its measured length ${this.bytes.length}`);
    this.bytes.set(bytes, at);
    if (this.ends) {
      const [from, to] = this.chunks.rowsOf(this.produced);
      for (let k = from; k < to; k++) this.ends[k] += at;
    }
    this.chunkStart.push(at + bytes.length);
    this.produced++;
    if (this.produced < this.chunks.count) return;
    if (at + bytes.length !== this.bytes.length) throw new Error(`a body rendered ${at + bytes.length} bytes, measured ${this.bytes.length}`);
    // Handed over, the bytes are counted by their new owner; readers still read them here.
    if (this.complete(this.bytes, this.ends) && this.claimed) {
      this.memory.unclaim(this.claimed, false);
      this.claimed = null;
    }
  }
}

/** Chunks kept for readers close behind the one that produced them. */
const RING_CHUNKS = 32;

/**
 * A body never held whole: each chunk is rendered into a pooled buffer of
 * its own. The last few stay in a ring for readers close behind, while the
 * budget has room for them; a reader that falls further behind renders the
 * chunks it needs again, for itself (rendering is deterministic, from the
 * same rows). A reader then holds at most one chunk.
 */
export class ChunkRing implements ChunkSource {
  private readonly ring = new Map<number, Chunk>();

  constructor(private readonly chunks: ChunkRenderer, private readonly memory: BodyMemory) {}

  take(i: number): Chunk | null {
    if (i >= this.chunks.count) return null;
    let c = this.ring.get(i);
    if (c) {
      c.holders++;
      return c;
    }
    const bytes = this.chunks.render(i, null);
    const pooled = this.memory.pool.take(bytes.length);
    pooled.set(bytes);
    // Held before the ring is trimmed: a reader far behind may have rendered the oldest chunk.
    c = { index: i, span: 1, bytes: pooled.subarray(0, bytes.length), holders: 1, pooled, budgeted: 0 };
    // Kept for the readers behind only while the budget has room; otherwise its reader alone holds it.
    if (this.memory.budget.tryTake(pooled.length)) {
      c.budgeted = pooled.length;
      this.ring.set(i, c);
      if (this.ring.size > RING_CHUNKS) this.evictOldest();
    }
    return c;
  }

  drop(c: Chunk): void {
    if (--c.holders === 0 && this.ring.get(c.index) !== c) this.free(c);
  }

  release(): void {
    for (const c of this.ring.values()) if (c.holders === 0) this.free(c);
    this.ring.clear();
  }

  private evictOldest(): void {
    let oldest = Infinity;
    for (const i of this.ring.keys()) oldest = Math.min(oldest, i);
    const c = this.ring.get(oldest)!;
    this.ring.delete(oldest);
    if (c.holders === 0) this.free(c);
  }

  /** A chunk that no reader holds and the ring no longer keeps: its buffer and budget go back. */
  private free(c: Chunk): void {
    if (c.pooled) this.memory.pool.giveBack(c.pooled);
    c.pooled = null;
    this.memory.budget.give(c.budgeted);
    c.budgeted = 0;
  }
}
