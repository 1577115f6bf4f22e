import type { BodyWriter } from '../render/envelope.js';
import type { OutputBuffer } from '../render/output-buffer.js';
import type { BodyMemory } from './body-memory.js';
import type { Body, Source } from './body.js';
import { ChunkRing, WholeBody, type Chunk, type ChunkRenderer, type ChunkSource } from './chunks.js';

/**
 * The bytes of a chunk are written for rows whose worst case fits this, so
 * no single piece of work on the event loop renders more than this.
 */
export const CHUNK_BYTES = 256 * 1024;
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

/**
 * One body being produced, shared by every request that needs it while it
 * is read, and by requests for a narrower time window of the same query
 * (a prefix of its rows, then the container's close).
 *
 * The length comes first, measured from the value lengths (a turn of the
 * event loop per slice of rows for large selections), so that every reader
 * can announce it. The bytes are then rendered a chunk at a time, when the
 * first reader needs that chunk (bodies/chunks.ts):
 * - As a rule the body is kept whole while it is read: one body per query,
 *   whatever the number of readers. A body the response cache may keep goes
 *   to the cache when complete.
 * - Past the budget (--bodies-mb), a body is never held whole: its chunks
 *   go round a ring, and a reader holds at most one.
 * - A reader that stops reading is parked: it gives its chunk back, and
 *   once every reader is parked, the body gives its memory back to the
 *   budget and goes on as a ring. Memory stays bounded whatever the readers
 *   and the queries.
 */
export class Production implements Source {
  total = -1;
  readonly encoding = null;
  private readers = 0;
  /** Readers that stopped reading and hold no chunk. */
  private parked = 0;
  private readonly waiting = new Set<(ok: boolean) => void>();
  private isRetired = false;
  /** Where readers take chunks from: the body kept whole, or a ring. */
  private chunks: ChunkSource | null = null;
  private readonly renderer: ChunkRenderer;
  /** The rows went to the cache, or back to the scratch. */
  private rowsGone = false;
  /** Bytes of the budget the rows (and the text around them) hold. */
  private readonly rowsBytes: number;

  constructor(
    readonly key: string,
    readonly writer: BodyWriter,
    private readonly owner: ProductionOwner,
    private readonly keeper: Keeper | null,
    /** Bare JSON and CSV: record where each row ends, for a body kept whole. */
    private readonly recordEnds: boolean,
  ) {
    const rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / writer.rowBound));
    this.renderer = {
      count: Math.max(1, Math.ceil(writer.n / rowsPerChunk)),
      rowsOf: (i) => [i * rowsPerChunk, Math.min(writer.n, (i + 1) * rowsPerChunk)],
      render: (i, ends) => {
        const out = owner.out;
        out.reset();
        const [from, to] = this.renderer.rowsOf(i);
        writer.write(out, from, to, ends);
        return out.view();
      },
    };
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
    const whole = this.owner.memory.claim(total);
    const ends = whole && this.recordEnds && this.keeper?.fits(total) ? new Uint32Array(this.writer.n) : null;
    this.chunks = whole ? new WholeBody(whole, this.renderer, this.owner.memory, ends, (bytes, e) => this.complete(bytes, e)) : new ChunkRing(this.renderer, this.owner.memory);
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
    return this.chunks!.take(i);
  }

  /** A reader is done with chunk `c`. */
  drop(c: Chunk): void {
    this.chunks!.drop(c);
  }

  readerOpened(): void {
    this.readers++;
  }

  readerClosed(parked: boolean): void {
    this.readers--;
    if (parked) this.parked--;
    this.retireIfUnread();
  }

  /** A reader stopped reading and gave its chunk back; once all have, so does the body, which goes on as a ring. */
  readerParked(): void {
    if (++this.parked < this.readers) return;
    this.chunks!.release();
    if (this.chunks instanceof WholeBody) this.chunks = new ChunkRing(this.renderer, this.owner.memory);
  }

  readerResumed(): void {
    this.parked--;
  }

  /** A body kept whole is complete: offered to the keeper; true when its bytes are now the keeper's. */
  private complete(bytes: Uint8Array, ends: Uint32Array | null): boolean {
    if (!this.keeper?.fits(bytes.length)) return false;
    const kept = this.keeper.keep(bytes, this.writer.rows, ends);
    if (kept.rows) {
      this.rowsGone = true;
      this.owner.memory.budget.give(this.rowsBytes);
    }
    return kept.bytes;
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

  /** No reader is left: the chunks, the rows and the budget go back. */
  private releaseAll(): void {
    this.chunks?.release();
    this.chunks = null;
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
