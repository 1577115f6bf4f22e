import type { BodyBudget } from './body-memory.js';
import { compressor, type Encoding } from './content-coding.js';
import { BytesBody, type Body, type Source } from './body.js';

/**
 * Compressions running at once. Each holds a compressor's state and the
 * compressed bytes so far, and the thread pool runs few at a time anyway:
 * the others wait their turn, and one whose clients all leave meanwhile
 * never starts.
 */
export const COMPRESSIONS_AT_ONCE = 4;

/** The turns of compressions: COMPRESSIONS_AT_ONCE run, the others wait in order. */
export class CompressionSlots {
  private running = 0;
  private readonly queue: Compression[] = [];

  constructor(private readonly max = COMPRESSIONS_AT_ONCE) {}

  /** Compressions waiting for their turn. */
  get waiting(): number {
    return this.queue.length;
  }

  enter(c: Compression): void {
    if (this.running < this.max) {
      this.running++;
      c.begin();
    } else {
      this.queue.push(c);
    }
  }

  /** `c` no longer needs its turn: over, or given up. */
  leave(c: Compression, started: boolean): void {
    if (!started) {
      const i = this.queue.indexOf(c);
      if (i >= 0) this.queue.splice(i, 1);
      return;
    }
    this.running--;
    const next = this.queue.shift();
    if (next) {
      this.running++;
      next.begin();
    }
  }
}

type State = 'plain-pending' | 'queued' | 'running' | 'done' | 'plain' | 'failed' | 'cancelled';

/**
 * One encoded body, compressed once on libuv's thread pool and shared by
 * every request that needs it meanwhile. The plain body is read a piece at a
 * time, the next piece only once zlib has consumed the one before, so a
 * large body is never held whole in plain form for compression's sake. The
 * encoded length is announced, so readers wait for the whole of it.
 *
 * The compressed bytes come from the budget of bodies in flight. When it has
 * no room for them, the compression gives up and its readers get the plain
 * body (its encoding becomes null). When every request waiting for it has
 * gone, it stops, or never starts.
 */
export class Compression implements Source {
  total = -1;
  /** The content coding of what `open` gives: null once it fell back to the plain body. */
  encoding: Encoding | null;
  private state: State = 'plain-pending';
  private bytes: Uint8Array | null = null;
  private readonly waiting = new Set<(ok: boolean) => void>();
  /** This compression's reader of the plain body, and how to stop waiting for it. */
  private plainBody: Body | null = null;
  private forgetPlain: () => void;
  private stopZ: (() => void) | null = null;
  /** Budget bytes held by the compressed bytes; readers of them, and whether all that will read them have opened. */
  private taken = 0;
  private readers = 0;
  private opening = true;

  constructor(
    readonly key: string,
    encoding: Encoding,
    private readonly plain: Source,
    private readonly budget: BodyBudget,
    private readonly slots: CompressionSlots,
    /** Runs once it is over: with its bytes, or null (fallen back, failed or cancelled; `err` for a failure). */
    private readonly done: (c: Compression, bytes: Uint8Array | null, err?: unknown) => void,
  ) {
    this.encoding = encoding;
    this.forgetPlain = plain.whenReady((ok) => {
      if (this.state !== 'plain-pending') return;
      if (!ok) return this.fail(new Error('the plain body could not be produced'));
      // Opened at once, so that the plain body stays while this waits for its turn.
      this.plainBody = plain.open();
      this.state = 'queued';
      slots.enter(this);
    });
  }

  /** Its turn has come: compresses the plain body. */
  begin(): void {
    if (this.state !== 'queued') return;
    this.state = 'running';
    const body = this.plainBody!;
    const z = compressor(this.encoding!);
    const parts: Buffer[] = [];
    let stopped = false;
    this.stopZ = () => {
      stopped = true;
      z.destroy();
    };
    z.on('data', (d: Buffer) => {
      if (stopped) return;
      if (!this.budget.tryTake(d.length)) return this.fallBack();
      this.taken += d.length;
      parts.push(d);
    });
    z.on('error', (err) => {
      if (!stopped) this.fail(err);
    });
    z.on('end', () => {
      if (!stopped) this.succeed(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    });
    let i = 0;
    const feed = (err?: Error | null): void => {
      if (err || stopped) return; // an error is reported by 'error'
      let piece: Uint8Array | null;
      try {
        piece = body.piece(i++);
      } catch (e) {
        this.fail(e);
        return;
      }
      if (piece === null) z.end();
      else z.write(piece, feed);
    };
    feed();
  }

  whenReady(ready: (ok: boolean) => void): () => void {
    if (this.state === 'done' || this.state === 'plain') {
      ready(true);
      return NOTHING;
    }
    if (this.state === 'failed' || this.state === 'cancelled') {
      ready(false);
      return NOTHING;
    }
    this.waiting.add(ready);
    return () => {
      if (this.waiting.delete(ready) && this.waiting.size === 0) this.cancel();
    };
  }

  open(): Body {
    if (this.state === 'plain') return this.plain.open();
    if (!this.opening) return new BytesBody(this.bytes!);
    this.readers++;
    return new BytesBody(this.bytes!, null, () => {
      if (--this.readers === 0 && !this.opening) this.giveBack();
    });
  }

  /** No one waits any more: stops, and gives back what it held. */
  private cancel(): void {
    const started = this.state === 'running';
    if (this.state !== 'queued' && !started && this.state !== 'plain-pending') return;
    this.state = 'cancelled';
    this.stop(started);
    this.done(this, null);
  }

  /** There is no room for the compressed bytes: readers get the plain body. */
  private fallBack(): void {
    this.state = 'plain';
    this.encoding = null;
    this.total = this.plain.total;
    // Readers open the plain body before this one's reading of it goes, so it stays for them.
    const body = this.plainBody;
    this.plainBody = null;
    this.stop(true);
    this.done(this, null);
    this.deliver(true);
    body?.release();
  }

  private succeed(bytes: Uint8Array): void {
    this.state = 'done';
    this.bytes = bytes;
    this.total = bytes.length;
    this.stop(true, false);
    this.done(this, bytes);
    this.deliver(true);
    this.opening = false;
    if (this.readers === 0) this.giveBack();
  }

  private fail(err: unknown): void {
    const started = this.state === 'running';
    this.state = 'failed';
    this.stop(started);
    this.done(this, null, err);
    this.deliver(false);
  }

  /** Ends the work: the compressor, the reading of the plain body, the turn, and (unless its bytes are kept) the budget. */
  private stop(started: boolean, dropBytes = true): void {
    this.forgetPlain();
    this.stopZ?.();
    this.stopZ = null;
    this.plainBody?.release();
    this.plainBody = null;
    this.slots.leave(this, started);
    if (dropBytes) this.giveBack();
  }

  /** The compressed bytes are read no more (or were never kept). */
  giveBack(): void {
    this.budget.give(this.taken);
    this.taken = 0;
  }

  private deliver(ok: boolean): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const w of waiting) w(ok);
  }
}

const NOTHING = (): void => undefined;
