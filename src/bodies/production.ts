import type { BodyWriter } from '../render/envelope.js';
import type { OutputBuffer } from '../render/output-buffer.js';
import type { BodyMemory } from './body-memory.js';
import type { Body, Source } from './body.js';

/**
 * The bytes of a chunk are written for rows whose worst case fits this, so
 * no single piece of work on the event loop renders more than this.
 */
export const CHUNK_BYTES = 256 * 1024;
/** Chunks kept for readers close behind the one that produced them. */
const RING_CHUNKS = 32;
/** Rows measured per turn of the event loop before a large body's length is known. */
const MEASURE_SLICE_ROWS = 16 * 1024;

/** What a production needs from its owner. */
export interface ProductionOwner {
  /** The render buffer of the event loop: chunks are written there, then copied out. */
  readonly out: OutputBuffer;
  /** The memory of bodies in flight, which buffers kept whole, chunks kept for readers and selections draw from. */
  readonly memory: BodyMemory;
  /** The production is over: it takes no more readers. */
  retired(p: Production): void;
  /** The rows are read no more. */
  giveBackRows(rows: Uint32Array): void;
}

/** Who keeps a complete body: the response cache. */
export interface Keeper {
  /** Whether a body of this length may be kept: it is then rendered whole. */
  fits(total: number): boolean;
  /** The whole body, its rows and for bare JSON where each record ends; says whether the bytes' buffer and the rows are now the keeper's. */
  keep(bytes: Uint8Array, rows: Uint32Array, ends: Uint32Array | null): { bytes: boolean; rows: boolean };
}

/** A chunk of a body (or for a body kept whole, the chunks rendered from one on) and the readers sending it. */
interface Chunk {
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

/**
 * One body being produced, shared by every request that needs it while it
 * is read, and by requests for a narrower time window of the same query
 * (a prefix of its rows, then the container's close).
 *
 * The length comes first, measured from the value lengths (a turn of the
 * event loop per slice of rows for large selections), so that every reader
 * can announce it. The bytes are then rendered a chunk at a time, when the
 * first reader needs that chunk:
 * - As a rule the body is kept whole while it is read: rendered once, in
 *   order, into one buffer that every reader reads, whenever it joined. One
 *   body per query, whatever the number of readers. A body the response
 *   cache may keep goes to the cache when complete.
 * - Past the budget (--bodies-mb), a body is never held whole. The last
 *   few chunks stay in a ring for readers close behind, while the budget
 *   has room for them; a reader that falls further behind renders the
 *   chunks it needs again, for itself (rendering is deterministic, from the
 *   same rows). A reader then holds at most one chunk.
 * - A reader that stops reading is parked: it gives its chunk back, and
 *   once every reader of a body kept whole is parked, the body gives its
 *   buffer back to the budget and goes on as a ring. Memory stays bounded
 *   whatever the readers and the queries.
 */
export class Production implements Source {
  total = -1;
  readonly encoding = null;
  private readonly chunkCount: number;
  private readonly rowsPerChunk: number;
  private readers = 0;
  /** Readers that stopped reading and hold no chunk. */
  private parked = 0;
  private readonly waiting = new Set<(ok: boolean) => void>();
  private isRetired = false;
  /** A body kept whole: its bytes, chunks rendered so far, and where each begins. */
  private whole: Uint8Array | null = null;
  private wholeEnds: Uint32Array | null = null;
  private produced = 0;
  private readonly chunkStart: number[] = [0];
  /** The rows went to the cache, or back to the scratch. */
  private rowsGone = false;
  private readonly ring = new Map<number, Chunk>();
  /** The claimed buffer this one holds, from the budget for whole bodies. */
  private claimed: Uint8Array | null = null;
  /** Bytes of the budget the rows (and the text around them) hold. */
  private readonly rowsBytes: number;

  constructor(
    readonly key: string,
    readonly writer: BodyWriter,
    private readonly owner: ProductionOwner,
    private readonly keeper: Keeper | null,
    /** Bare JSON: record where each row ends, for a body kept whole. */
    private readonly recordEnds: boolean,
  ) {
    this.rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / writer.rowBound));
    this.chunkCount = Math.max(1, Math.ceil(writer.n / this.rowsPerChunk));
    this.rowsBytes = writer.rows.buffer.byteLength + writer.frameBytes;
    owner.memory.budget.take(this.rowsBytes);
    this.measure(0, writer.frameLength(), false);
  }

  /** Measures from row `from` on; `later` once past the constructor, when requests may be waiting. */
  private measure(from: number, bytes: number, later: boolean): void {
    const to = Math.min(this.writer.n, from + MEASURE_SLICE_ROWS);
    bytes += this.writer.rowsLength(from, to);
    if (to < this.writer.n) setImmediate(() => this.measure(to, bytes, true));
    else this.ready(bytes, later);
  }

  private ready(total: number, later: boolean): void {
    this.total = total;
    // Kept whole if the budget has room; a body the cache may keep is then the cache's once complete (with where its records end, for narrowing).
    this.whole = this.claimed = this.owner.memory.claim(total);
    if (this.whole && this.recordEnds && this.keeper?.fits(total)) this.wholeEnds = new Uint32Array(this.writer.n);
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const w of waiting) w(true);
    // Known at once, the length is read by the request that started the production.
    if (later) this.retireIfUnread();
  }

  whenReady(ready: (ok: boolean) => void): () => void {
    if (this.total >= 0) {
      ready(true);
      return NOTHING;
    }
    this.waiting.add(ready);
    // Measuring goes on (it is short): once done with no one waiting, the production retires.
    return () => this.waiting.delete(ready);
  }

  open(): Body {
    return new ProductionReader(this, -1, null);
  }

  /**
   * The body of the first `k` rows: this body's bytes up to the end of row
   * k - 1, then `tail` (the container's close). Only for a body without an
   * envelope, with 0 < k < n.
   */
  narrowed(k: number, tail: Uint8Array): Source {
    const p = this;
    let cut = -1;
    const source: Source = {
      total: -1,
      encoding: null,
      whenReady(ready) {
        return p.whenReady((ok) => {
          if (ok && cut < 0) {
            // The dropped rows are few (they left the window a moment ago): measured, not the kept ones.
            cut = p.total - tail.length - p.writer.rowsLength(k, p.writer.n);
            (source as { total: number }).total = cut + tail.length;
          }
          ready(ok);
        });
      },
      open: () => new ProductionReader(p, cut, tail),
    };
    if (this.total >= 0) source.whenReady(() => undefined);
    return source;
  }

  /** Chunk `i` for a reader (counted as one of its holders until `drop`), or null past the last. */
  take(i: number): Chunk | null {
    if (i >= this.chunkCount) return null;
    if (this.whole) {
      while (this.produced <= i) this.renderInto(this.whole);
      // Everything rendered so far in one piece: the socket takes as much of it as it can.
      return { index: i, span: this.produced - i, bytes: this.whole.subarray(this.chunkStart[i], this.chunkStart[this.produced]), holders: 1, pooled: null, budgeted: 0 };
    }
    let c = this.ring.get(i);
    if (c) {
      c.holders++;
      return c;
    }
    c = this.render(i);
    // Held before the ring is trimmed: a reader far behind may have rendered the oldest chunk.
    c.holders++;
    // Kept for the readers behind only while the budget has room; otherwise its reader alone holds it.
    if (this.owner.memory.budget.tryTake(c.pooled!.length)) {
      c.budgeted = c.pooled!.length;
      this.ring.set(i, c);
      if (this.ring.size > RING_CHUNKS) this.evictOldest();
    }
    return c;
  }

  /** A reader is done with chunk `c`. */
  drop(c: Chunk): void {
    if (--c.holders === 0 && this.ring.get(c.index) !== c) this.free(c);
  }

  readerOpened(): void {
    this.readers++;
  }

  readerClosed(parked: boolean): void {
    this.readers--;
    if (parked) this.parked--;
    this.retireIfUnread();
  }

  /** A reader stopped reading and gave its chunk back; once all have, so does the body. */
  readerParked(): void {
    if (++this.parked < this.readers) return;
    if (this.claimed) {
      this.owner.memory.unclaim(this.claimed, true);
      this.claimed = null;
      this.whole = null;
      this.wholeEnds = null;
    }
    for (const c of this.ring.values()) if (c.holders === 0) this.free(c);
    this.ring.clear();
  }

  readerResumed(): void {
    this.parked--;
  }

  private rowsOf(i: number): [number, number] {
    const from = i * this.rowsPerChunk;
    return [from, Math.min(this.writer.n, from + this.rowsPerChunk)];
  }

  /** Renders chunk `i` into a pooled buffer of its own. */
  private render(i: number): Chunk {
    const out = this.owner.out;
    out.reset();
    const [from, to] = this.rowsOf(i);
    this.writer.write(out, from, to);
    const bytes = out.view();
    const pooled = this.owner.memory.pool.take(bytes.length);
    pooled.set(bytes);
    return { index: i, span: 1, bytes: pooled.subarray(0, bytes.length), holders: 0, pooled, budgeted: 0 };
  }

  /** A chunk that no reader holds and the ring no longer keeps: its buffer and budget go back. */
  private free(c: Chunk): void {
    if (c.pooled) this.owner.memory.pool.giveBack(c.pooled);
    c.pooled = null;
    this.owner.memory.budget.give(c.budgeted);
    c.budgeted = 0;
  }

  /** Renders the next chunk of a body kept whole at its place in `whole`. */
  private renderInto(whole: Uint8Array): void {
    const out = this.owner.out;
    out.reset();
    const [from, to] = this.rowsOf(this.produced);
    const at = this.chunkStart[this.produced];
    this.writer.write(out, from, to, this.wholeEnds);
    const bytes = out.view();
    if (at + bytes.length > whole.length) throw new Error(`a body rendered past its measured length ${whole.length}`);
    whole.set(bytes, at);
    if (this.wholeEnds) for (let k = from; k < to; k++) this.wholeEnds[k] += at;
    this.chunkStart.push(at + bytes.length);
    this.produced++;
    if (this.produced < this.chunkCount) return;
    if (at + bytes.length !== whole.length) throw new Error(`a body rendered ${at + bytes.length} bytes, measured ${whole.length}`);
    if (!this.keeper?.fits(whole.length)) return;
    const kept = this.keeper.keep(whole, this.writer.rows, this.wholeEnds);
    if (kept.rows) {
      this.rowsGone = true;
      this.owner.memory.budget.give(this.rowsBytes);
    }
    // The cache's budget counts the bytes from now on; readers still read them here.
    if (kept.bytes && this.claimed) {
      this.owner.memory.unclaim(this.claimed, false);
      this.claimed = null;
    }
  }

  private evictOldest(): void {
    let oldest = Infinity;
    for (const i of this.ring.keys()) oldest = Math.min(oldest, i);
    const c = this.ring.get(oldest)!;
    this.ring.delete(oldest);
    if (c.holders === 0) this.free(c);
  }

  private retireIfUnread(): void {
    if (this.readers === 0 && this.total >= 0 && this.waiting.size === 0) {
      this.retire();
      this.releaseAll();
    }
  }

  private retire(): void {
    if (this.isRetired) return;
    this.isRetired = true;
    this.owner.retired(this);
  }

  /** No reader is left: the ring's chunks, the rows and the budget go back. */
  private releaseAll(): void {
    if (this.claimed) this.owner.memory.unclaim(this.claimed, true);
    this.claimed = null;
    this.whole = null;
    for (const c of this.ring.values()) if (c.holders === 0) this.free(c);
    this.ring.clear();
    if (!this.rowsGone) {
      this.rowsGone = true;
      this.owner.giveBackRows(this.writer.rows);
      this.owner.memory.budget.give(this.rowsBytes);
    }
  }
}

/**
 * One response's reading of a production: it holds at most the chunk it is
 * sending. With a cut, the body ends there and `tail` follows.
 */
class ProductionReader implements Body {
  private held: Chunk | null = null;
  private parked = false;
  private closed = false;
  private nextChunk = 0;
  /** Bytes of the production's body before the next chunk. */
  private offset = 0;
  private tailSent = false;

  constructor(private readonly p: Production, private readonly cut: number, private readonly tail: Uint8Array | null) {
    p.readerOpened();
  }

  get total(): number {
    return this.cut < 0 ? this.p.total : this.cut + this.tail!.length;
  }

  piece(): Uint8Array | null {
    if (this.held) this.p.drop(this.held);
    this.held = null;
    if (this.parked) {
      this.parked = false;
      this.p.readerResumed();
    }
    if (this.cut < 0 || this.offset < this.cut) {
      const c = this.p.take(this.nextChunk);
      if (c) {
        this.nextChunk += c.span;
        this.held = c;
        const start = this.offset;
        this.offset += c.bytes.length;
        return this.cut >= 0 && this.offset > this.cut ? c.bytes.subarray(0, this.cut - start) : c.bytes;
      }
    }
    if (this.tail && !this.tailSent) {
      this.tailSent = true;
      return this.tail;
    }
    return null;
  }

  /**
   * Gives the chunk being sent back, to be taken again (rendered again if
   * need be) when the client reads on: the piece asked for next is the one
   * just handed out. False when nothing is held (the tail is constant).
   */
  park(): boolean {
    if (!this.held || this.closed) return false;
    this.nextChunk = this.held.index;
    this.offset -= this.held.bytes.length;
    this.p.drop(this.held);
    this.held = null;
    this.parked = true;
    this.p.readerParked();
    return true;
  }

  release(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.held) this.p.drop(this.held);
    this.held = null;
    this.p.readerClosed(this.parked);
  }
}

const NOTHING = (): void => undefined;
