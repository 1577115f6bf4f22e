/**
 * The budget of the memory that bodies in flight may take (--bodies-mb): buffers of bodies
 * kept whole while they are read, chunks kept for readers close behind,
 * the selections that productions render from, and compressed bodies. The
 * response cache has a budget of its own (--cache-mb).
 *
 * Takers that can do without (a body kept whole, a chunk kept in a ring, a
 * compressed body) ask first and back off when the budget is spent; what a
 * production cannot do without (its selection) is taken anyway, and makes
 * the others back off. Whatever is taken is given back when its last
 * reader leaves.
 */
export class BodyBudget {
  /** Bytes taken now, and the most ever taken at once. */
  used = 0;
  peak = 0;
  /** Times a taker was refused and did without. */
  refusals = 0;

  constructor(readonly limit: number) {}

  /** Takes `bytes` if they fit in what is left; false takes nothing. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.limit) {
      this.refusals++;
      return false;
    }
    this.take(bytes);
    return true;
  }

  /** Takes `bytes` that the work cannot do without, even past the limit. */
  take(bytes: number): void {
    this.used += bytes;
    if (this.used > this.peak) this.peak = this.used;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}

/**
 * Fixed-size buffers for chunks, reused: a fresh buffer costs a page fault
 * per 4 KB written, and the garbage collector later.
 */
export class ChunkPool {
  private readonly spares: Uint8Array[] = [];

  constructor(private readonly size: number, private readonly maxSpares: number) {}

  take(bytes: number): Uint8Array {
    if (bytes > this.size) return new Uint8Array(bytes);
    return this.spares.pop() ?? new Uint8Array(this.size);
  }

  giveBack(buf: Uint8Array): void {
    if (buf.length === this.size && this.spares.length < this.maxSpares) this.spares.push(buf);
  }
}

/**
 * A buffer given back by a production is kept this long for the next one.
 * Each new one costs a page fault per 4 KB written, and freeing one stalls
 * the garbage collector: clients that fetch the same large body again and
 * again would pay both each time (bench/README.md has the measure).
 */
const SPARE_WHOLE_MS = 60_000;

/**
 * The memory of bodies in flight, in one place: the budget (--bodies-mb),
 * the buffers of bodies kept whole (with the spare kept for the next one),
 * and the pool of chunk buffers. A production draws everything from here.
 */
export class BodyMemory {
  readonly budget: BodyBudget;
  readonly pool: ChunkPool;
  /** A buffer given back, kept (and counted in the budget) for the next claim. */
  private spare: Uint8Array | null = null;
  private spareTimer: NodeJS.Timeout | null = null;

  constructor(budgetBytes: number, chunkBytes: number, pooledChunks: number) {
    this.budget = new BodyBudget(budgetBytes);
    this.pool = new ChunkPool(chunkBytes, pooledChunks);
  }

  /** A buffer for a body of this length kept whole while it is read, from the budget; null when there is no room. */
  claim(bytes: number): Uint8Array | null {
    const spare = this.spare;
    if (spare && spare.length >= bytes) {
      // Already counted in the budget: it changes hands.
      this.spare = null;
      this.clearSpareTimer();
      return spare.subarray(0, bytes);
    }
    if (!this.budget.tryTake(bytes)) {
      this.dropSpare();
      if (!this.budget.tryTake(bytes)) return null;
    }
    // Never a slice of Node's shared pool: the whole buffer is what the budget counts.
    const raw = Buffer.allocUnsafeSlow(bytes);
    return new Uint8Array(raw.buffer, raw.byteOffset, bytes);
  }

  /** A claimed buffer is read no more (`reusable`: kept a while for the next claim), or is now the response cache's. */
  unclaim(buf: Uint8Array, reusable: boolean): void {
    const whole = new Uint8Array(buf.buffer, buf.byteOffset, buf.buffer.byteLength - buf.byteOffset);
    if (!reusable || (this.spare && this.spare.length >= whole.length)) {
      this.budget.give(whole.length);
      return;
    }
    this.dropSpare();
    this.spare = whole;
    this.spareTimer = setTimeout(() => this.dropSpare(), SPARE_WHOLE_MS).unref();
  }

  private dropSpare(): void {
    this.clearSpareTimer();
    if (this.spare) this.budget.give(this.spare.length);
    this.spare = null;
  }

  private clearSpareTimer(): void {
    if (this.spareTimer) clearTimeout(this.spareTimer);
    this.spareTimer = null;
  }
}
