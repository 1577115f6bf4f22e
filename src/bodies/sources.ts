import type { Logger } from '../core/log.js';
import { cursorOf } from '../query/cursor.js';
import { execute, selectRows } from '../query/execute.js';
import { narrowable, type Plan } from '../query/plan.js';
import type { Changes } from '../query/selection.js';
import type { QueryScratch } from '../query/scratch.js';
import { countStats } from '../query/stats-counts.js';
import { BodyWriter, type ChangeFrame } from '../render/envelope.js';
import { OutputBuffer } from '../render/output-buffer.js';
import { statsJson } from '../render/stats-body.js';
import type { Store } from '../store/store.js';
import { BodyMemory } from './body-memory.js';
import { COMPRESSIONS_AT_ONCE, Compression, CompressionSlots } from './compression.js';
import { MIN_ENCODED_BYTES, type Encoding } from './content-coding.js';
import { CHUNK_BYTES, Production, type ProductionOwner } from './production.js';
import { ResponseCache, countBelow } from './response-cache.js';
import { BytesBody, type Body, type Kept, type Source } from './body.js';

/** Chunk buffers kept between productions. */
const POOLED_CHUNKS = 128;
/**
 * The memory of bodies in flight, beyond what the response cache keeps
 * (--bodies-mb): room for the whole-store JSON dump of a million records
 * kept whole while it is read. Past it, bodies go through a ring of chunks.
 */
export const DEFAULT_WHOLE_BODIES_BYTES = 512 * 1024 * 1024;

/** Bytes in memory, ready to send as they are. */
class Ready implements Source {
  readonly total: number;
  readonly kept: Kept | undefined;

  /** `entry`: the cache's entry these bytes are, if they are. */
  constructor(private readonly bytes: Uint8Array, private readonly tail: Uint8Array | null, readonly encoding: Encoding | null, entry?: Kept) {
    this.total = bytes.length + (tail?.length ?? 0);
    this.kept = tail === null && entry?.bytes === bytes ? entry : undefined;
  }

  whenReady(ready: (ok: boolean) => void): () => void {
    ready(true);
    return NOTHING;
  }

  open(): Body {
    return new BytesBody(this.bytes, this.tail);
  }
}

/**
 * A body just rendered into the shared render buffer. Sent at once as a
 * rule; a response that must keep it longer takes the buffer over (lending
 * is cheaper than copying a body of megabytes) and gives it back when sent.
 */
class Rendered implements Source, Body {
  readonly total: number;
  readonly encoding = null;
  private lent: Uint8Array | null = null;

  constructor(private readonly out: OutputBuffer) {
    this.total = out.pos;
  }

  whenReady(ready: (ok: boolean) => void): () => void {
    ready(true);
    return NOTHING;
  }

  open(): Body {
    return this;
  }

  piece(i: number): Uint8Array | null {
    return i === 0 ? this.out.view() : null;
  }

  keep(): void {
    // The bytes stay where they are, in the lent buffer.
    this.lent = this.out.lend();
  }

  release(): void {
    if (this.lent) this.out.giveBack(this.lent);
    this.lent = null;
  }
}

/**
 * Where the body of an /api answer comes from, one place for the whole
 * policy: the response cache (whole, or narrowed to the window), a
 * production already under way that the request joins, or a new
 * production. Encoded bodies the same way, compressed once from the plain
 * body. Each body is thus produced once however many requests need it at
 * the same time.
 */
export class BodySources implements ProductionOwner {
  /** Bodies produced (rendered or compressed), and requests that joined one under way. */
  productions = 0;
  compressions = 0;
  joins = 0;
  /** Requests answered from the response cache, and requests that found nothing there. */
  cacheHits = 0;
  cacheMisses = 0;
  readonly out = new OutputBuffer();
  readonly memory: BodyMemory;
  readonly slots: CompressionSlots;
  private readonly underWay = new Map<string, Production | Compression>();
  /** Per narrowable body's key, the production of the widest window under way: narrower windows read a prefix of it. */
  private readonly widest = new Map<string, { p: Production; end: number }>();

  /** `scratch` is the query working space of the event loop, shared with whatever else runs queries there. */
  /** `threads`: the serving threads of the process, which share the spare chunks and the compressions at once between them (docs/threads.md). */
  constructor(private readonly cache: ResponseCache, private readonly scratch: QueryScratch, budgetBytes: number, private readonly log: Logger, threads = 1) {
    this.memory = new BodyMemory(budgetBytes, CHUNK_BYTES + 64 * 1024, Math.ceil(POOLED_CHUNKS / threads));
    this.slots = new CompressionSlots(Math.ceil(COMPRESSIONS_AT_ONCE / threads));
  }

  /** Productions and compressions under way. */
  get inFlight(): number {
    return this.underWay.size;
  }

  /**
   * The body for `plan` on `store`, window ending at row `end`, in `encoding`
   * where that pays; `shared` when several requests open it. A plan with
   * `since` comes with its change set, worked out for this second.
   */
  source(store: Store, plan: Plan, end: number, nowMs: number, encoding: Encoding | null, shared = false, changes: Changes | null = null): Source {
    if (plan.sort === 'random') return this.random(store, plan, end, nowMs, encoding);
    const key = this.cache.key(store, plan, end, Math.floor(nowMs / 1000));
    if (encoding) {
      const encodedKey = ResponseCache.encodedKey(key, end, encoding);
      const kept = this.cache.enabled ? this.cache.lookup(encodedKey, end, store, plan) : undefined;
      if (kept) {
        this.cacheHits++;
        return new Ready(kept.bytes, null, encoding, 'end' in kept ? kept : undefined);
      }
      const running = this.underWay.get(encodedKey);
      if (running) {
        this.joins++;
        return running;
      }
      const plain = this.plain(store, plan, end, nowMs, key, true, changes);
      if (plain.total >= 0 && plain.total < MIN_ENCODED_BYTES) return plain;
      const c = new Compression(encodedKey, encoding, plain, this.memory.budget, this.slots, (done, bytes, err) => this.compressed(done, bytes, err, end));
      this.compressions++;
      if (c.total < 0) this.underWay.set(encodedKey, c);
      return c;
    }
    return this.plain(store, plan, end, nowMs, key, shared, changes);
  }

  /** A body in an order drawn for this request alone: never cached, never shared. */
  private random(store: Store, plan: Plan, end: number, nowMs: number, encoding: Encoding | null): Source {
    const n = execute(store, plan, end, this.scratch);
    this.productions++;
    const writer = new BodyWriter(store, plan, this.scratch.rows, n, nowMs);
    let plain: Source;
    if (n * writer.rowBound <= CHUNK_BYTES) {
      this.out.reset();
      writer.write(this.out, 0, n);
      plain = encoding ? new Ready(this.out.view().slice(), null, null) : new Rendered(this.out);
    } else {
      plain = new Production('', new BodyWriter(store, plan, this.scratch.lendRows(n), n, nowMs), this, null, false);
    }
    if (!encoding || (plain.total >= 0 && plain.total < MIN_ENCODED_BYTES)) return plain;
    this.compressions++;
    return new Compression('', encoding, plain, this.memory.budget, this.slots, (_c, _bytes, err) => this.failed(err));
  }

  /** The plain body; `stable` when its bytes must outlive the next request (compression reads them later, or several requests do). */
  private plain(store: Store, plan: Plan, end: number, nowMs: number, key: string, stable: boolean, changes: Changes | null): Source {
    const kept = this.cache.enabled ? this.cache.lookup(key, end, store, plan) : undefined;
    if (kept) {
      this.cacheHits++;
      return new Ready(kept.bytes, kept.tail, null, 'end' in kept ? kept : undefined);
    }
    if (this.cache.enabled) this.cacheMisses++;
    if (plan.get === 'stats') {
      // A few hundred bytes at most, counted in one pass: never a production to join.
      this.productions++;
      const bytes = Buffer.from(statsJson(countStats(store, plan, end, this.scratch), store.meta.services, plan.pretty));
      const cached = this.cache.enabled ? this.cache.offerEntry(key, { bytes, tail: null, end, rows: null, ends: null }, true) : undefined;
      return new Ready(cached?.bytes ?? bytes, null, null, cached);
    }
    const productionKey = `${key}|${end}`;
    const running = this.underWay.get(productionKey);
    if (running) {
      this.joins++;
      return running;
    }
    const narrow = narrowable(plan);
    const wider = narrow ? this.widest.get(key) : undefined;
    if (wider && end < wider.end) {
      // Rows are freshest first: the narrower window's rows are those of the wider one below its end.
      const k = countBelow(wider.p.writer.rows.subarray(0, wider.p.writer.n), end);
      if (k > 0) {
        this.joins++;
        return k === wider.p.writer.n ? wider.p : wider.p.narrowed(k, wider.p.writer.closeBytes());
      }
    }

    let n: number;
    let frame: ChangeFrame | null = null;
    if (plan.since) {
      // A change set: its upserts are the rows (in the scratch, where a given one is copied), its removes and cursor the frame.
      const c = changes!;
      this.scratch.fit(store).rows.set(c.rows);
      n = c.n;
      frame = { cursor: cursorOf(store, plan, Math.floor(nowMs / 1000)), reset: c.reset, removes: c.removes };
    } else n = selectRows(store, plan, end, this.scratch);
    this.productions++;
    const small = new BodyWriter(store, plan, this.scratch.rows, n, nowMs, frame);
    if (n * small.rowBound + (frame ? small.frameLength() : 0) <= CHUNK_BYTES) {
      // Small enough to render at once.
      const out = this.out;
      out.reset();
      const ends = this.cache.enabled && narrow && (plan.json || plan.csv) ? new Uint32Array(n) : null;
      small.write(out, 0, n, ends);
      const cached = this.cache.enabled
        ? this.cache.offerEntry(key, { bytes: out.view(), tail: null, end, rows: narrow ? this.scratch.rows.slice(0, n) : null, ends }, false)
        : undefined;
      if (cached) return new Ready(cached.bytes, null, null, cached);
      return stable ? new Ready(out.view().slice(), null, null) : new Rendered(out);
    }

    const writer = new BodyWriter(store, plan, this.scratch.lendRows(n), n, nowMs, frame);
    const cache = this.cache;
    const keeper = cache.enabled
      ? {
        fits: (total: number) => total <= cache.maxEntryBytes,
        keep: (bytes: Uint8Array, rows: Uint32Array, ends: Uint32Array | null) => {
          const kept = cache.offer(key, { bytes, tail: null, end, rows: narrow ? rows : null, ends }, true);
          return { bytes: kept?.buffer === bytes.buffer, rows: kept !== undefined && narrow };
        },
      }
      : null;
    const p = new Production(productionKey, writer, this, keeper, narrow && (plan.json || plan.csv));
    this.underWay.set(productionKey, p);
    if (narrow) this.widest.set(key, { p, end });
    return p;
  }

  retired(p: Production): void {
    if (this.underWay.get(p.key) === p) this.underWay.delete(p.key);
    const key = p.key.slice(0, p.key.lastIndexOf('|'));
    if (this.widest.get(key)?.p === p) this.widest.delete(key);
  }

  giveBackRows(rows: Uint32Array): void {
    this.scratch.giveBackRows(rows);
  }

  private compressed(c: Compression, bytes: Uint8Array | null, err: unknown, end: number): void {
    if (this.underWay.get(c.key) === c) this.underWay.delete(c.key);
    // Bytes the cache keeps are counted in its budget from now on.
    if (bytes && this.cache.offer(c.key, { bytes, tail: null, end, rows: null, ends: null }, true)?.buffer === bytes.buffer) c.giveBack();
    this.failed(err);
  }

  /** A compression that failed (not one given up for want of room, or because its clients left). */
  private failed(err: unknown): void {
    if (err !== undefined) this.log.error({ event: 'compression_failed', err }, 'compressing a response body failed');
  }
}

const NOTHING = (): void => undefined;

