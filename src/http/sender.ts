import { BytesBody, type Body } from '../bodies/body.js';
import type { Logger } from '../core/log.js';
import type { Exchange } from './exchange.js';
import type { HttpFailure } from './failures.js';
import { head, type Head, type Headers } from './head.js';

/** A response whose body the socket could not take at once. */
class Outgoing {
  /** The piece being sent, its index, and the write offset at which it begins. */
  index = 0;
  base = 0;
  /** The client's progress: its write offset, and when it last moved. */
  offset = 0;
  progressAtMs = 0;
  /** When it was last written to; a push is for bodies that writable events left alone for a while. */
  wroteAtMs = 0;
  /** The body gave back the piece being sent while the client did not read. */
  parked = false;
  /** Waiting in the queue of bodies to write more of. */
  queued = false;
  /** Set for a body whose status and headers are written in its first turn. */
  head: Head | null = null;

  constructor(readonly ex: Exchange, public body: Body, public current: Uint8Array) {}

  /**
   * Lets go of the body once it is released: the writable and abort
   * handlers given to the engine, which hold this, may outlive the
   * response, and a body must not keep the store it was made from alive
   * (a store swapped out stayed in memory without this).
   */
  drop(): void {
    this.body = GONE;
    this.current = EMPTY;
  }
}

/**
 * How often bodies still being sent are pushed on. uWebSockets.js writes
 * again only on a writable event, which Linux raises once a large part of
 * the send buffer is free: to a client reading 100 KB/s that is tens of
 * seconds, longer than the 10 s after which uWebSockets.js drops a silent
 * connection. Each push writes what the socket takes now and restarts that
 * timeout.
 */
const PUSH_INTERVAL_MS = 1000;
/**
 * The most a response is written in one go before the others get their
 * turn: a fast client may take a whole body as fast as it is produced.
 */
const SLICE_BYTES = 4 * 1024 * 1024;
/**
 * The shortest time a write of pending bodies goes on before it lets timers
 * and new requests in: a writable event's, a first write's, and a pass over
 * the queue when nothing else ran since the last one. A request that comes
 * in meanwhile waits for the rest of it, and for the write under way when
 * the time ran out (MAX_WRITE).
 */
const PASS_MS = 0.05;
/**
 * A pass over the queue goes on for as long as the rest of the event loop
 * ran since the last pass, up to this: pending bodies get half the core
 * when new requests keep it busy, and never a time slice so short that
 * they fall ever further behind (a body of a megabyte waited tens of
 * milliseconds behind the requests of 64 clients). A small answer waits
 * at most this long for a pass.
 */
const MAX_PASS_MS = 2;
/**
 * The most one `tryEnd` is given. To a client on loopback that reads as
 * fast as it is written, the kernel goes on copying one send() for as long
 * as the client takes the bytes: tens of milliseconds for a body of
 * hundreds of megabytes, in one call that nothing interrupts. A pass may
 * end one such write late.
 */
const MAX_WRITE = 512 * 1024;
/**
 * While a few clients are answered beside the pending bodies (at least one
 * answer and at most FEW_ANSWERS since the last pass over the queue), a
 * small answer's wait is the rest of the write under way: the pending
 * bodies then write in turns this short and in writes this small. When
 * many answers come (the loop is busy with requests of every size), a pass
 * already lasts as long as the rest of the loop, and smaller writes would
 * only starve the bodies; a body alone, with no answer to make way for,
 * would only be slowed. Both keep PASS_MS and MAX_WRITE.
 */
const SHORT_PASS_MS = 0.02;
const SHORT_WRITE = 64 * 1024;
const FEW_ANSWERS = 4;
/**
 * Bodies up to this long made ready after their request's handler are
 * written as soon as they are ready; longer ones in turn with the pending
 * ones: many bodies that a production makes ready at once take turns beyond
 * this. A body ready in its handler is begun there, whatever its length,
 * for one pass's time: one request's work, as each request's is.
 */
const INLINE_BYTES = 256 * 1024;
/**
 * Where the engine keeps a write until it is on the socket (node), the most
 * writes from the queue handed over and not yet flushed, across all bodies,
 * before the queue waits for one of them (a handler's first write is an
 * answer ready in its handler, never held back): Node's loop writes what sockets take of
 * them when it polls, in one go and before it reads any request, so
 * writes under way are what a small answer waits for. One such write that
 * has not flushed for UNFLUSHED_STALE_MS is a client that does not read,
 * whose socket takes nothing more meanwhile: it is no longer counted.
 */
const MAX_UNFLUSHED = 2;
const UNFLUSHED_STALE_MS = 10;
/** A client that has taken no byte for this long is left to the timeout. */
const STALL_LIMIT_MS = 60_000;
/** A client that has taken no byte for this long is parked: its body gives back what it holds until it reads on. */
const PARK_AFTER_MS = 3000;
const EMPTY = new Uint8Array(0);
/** What a finished response's state points to instead of its body. */
const GONE = new BytesBody(EMPTY);
const TEXT = 'text/plain; charset=utf-8';
const encoder = new TextEncoder();

/**
 * Writes every response of an app: status, headers and the start of the body
 * in one cork, and the rest of bodies that sockets could not take at once,
 * on writable events and by a periodic push. It owns those pending bodies.
 */
export class Sender {
  private readonly pending = new Set<Outgoing>();
  /** Pending bodies whose sockets take more, in turn. */
  private readonly queue: Outgoing[] = [];
  /** Pending bodies whose last write the engine still holds (MAX_UNFLUSHED). */
  private readonly unflushed = new Set<Outgoing>();
  private draining = false;
  /** A pass is due once writes held too long no longer count (MAX_UNFLUSHED). */
  private retry: NodeJS.Timeout | null = null;
  /** When the last pass over the queue ended: the next one lasts as long as the loop ran since. */
  private passEndedMs = 0;
  /** Answers given since the last pass began, and whether the pending bodies write in short turns (SHORT_PASS_MS). */
  private answers = 0;
  private short = false;
  private pusher: NodeJS.Timeout | null = null;
  /** The heads of the catalogue's fixed failures (HTTP_FAILURES), made once each. */
  private readonly errorHeads = new WeakMap<HttpFailure, Head>();

  constructor(private readonly log: Logger) {}

  /** Responses whose bodies are still being sent. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Answers with bytes in memory, which must not change until they are sent. */
  bytes(ex: Exchange, h: Head, bytes: Uint8Array): void {
    this.body(ex, h, new BytesBody(bytes));
  }

  /** Answers with a body of pieces. A HEAD answer announces its length and reads none of it. */
  body(ex: Exchange, h: Head, body: Body): void {
    if (ex.aborted) {
      body.release();
      return;
    }
    ex.answer(h.status, body.total);
    this.answers++;
    if (!ex.head && !ex.inHandler && body.total > INLINE_BYTES) {
      // Many large bodies may become ready at once (readers of one production): each is begun in turn.
      const o = new Outgoing(ex, body, EMPTY);
      o.head = h;
      this.hold(o, 0);
      this.enqueue(o);
      return;
    }
    ex.write(() => {
      ex.writeHead(h);
      if (ex.head) {
        ex.endHead(body.total);
        body.release();
        return;
      }
      // The write offset counts body bytes only: nothing of the body is written yet.
      const first = body.piece(0) ?? EMPTY;
      if (first.length === body.total && body.total <= MAX_WRITE) {
        // The whole body in one piece and one write, the common answer: no pending state unless the socket holds some back.
        const [, finished] = ex.tryEnd(first, body.total);
        if (finished) body.release();
        else this.hold(new Outgoing(ex, body, first), ex.writeOffset());
        return;
      }
      const o = new Outgoing(ex, body, first);
      const [, finished] = this.sendRest(o, 0, performance.now() + this.passMs());
      if (finished) body.release();
      else this.hold(o, ex.writeOffset());
    });
  }

  /** A 304 (its head says so): status and headers, no body and no length (RFC 9110 15.4.5). */
  notModified(ex: Exchange, h: Head): void {
    if (ex.aborted) return;
    ex.answer(h.status, 0);
    this.answers++;
    ex.write(() => {
      ex.writeHead(h);
      ex.endEmpty();
    });
  }

  /** A one-line `Error: ...` answer of the catalogue (docs/api.md, Errors), with its Retry-After. */
  error(ex: Exchange, failure: HttpFailure, extra: Headers = []): void {
    this.bytes(ex, this.errorHead(failure, extra), encoder.encode(`Error: ${failure.message}`));
  }

  /**
   * A one-line error after which the connection is closed: nothing that
   * follows on it can be read as a request (docs/operations.md, Memory, hostile clients and secrets).
   */
  errorAndClose(ex: Exchange, failure: HttpFailure): void {
    const body = encoder.encode(`Error: ${failure.message}`);
    ex.answer(failure.status, body.length);
    this.answers++;
    ex.write(() => {
      ex.writeHead(this.errorHead(failure, []));
      ex.endAndClose(body);
    });
  }

  /** The head of a failure's answer, as `error` writes it. */
  errorHeadOf(failure: HttpFailure, extra: Headers = []): Head {
    return this.errorHead(failure, extra);
  }

  /** The head of an error answer: its status, the error headers, its Retry-After and `extra`. */
  private errorHead(failure: HttpFailure, extra: Headers): Head {
    const fixed = extra.length === 0;
    let h = fixed ? this.errorHeads.get(failure) : undefined;
    if (h === undefined) {
      const retry: Headers = failure.retryAfterS === undefined ? [] : [['Retry-After', String(failure.retryAfterS)]];
      h = head(failure.status, [...ERROR_HEADERS, ...retry, ...extra]);
      if (fixed) this.errorHeads.set(failure, h);
    }
    return h;
  }

  /** Gives up every body still being sent (at the end of a graceful stop). */
  abandonAll(): void {
    for (const o of [...this.pending]) this.finish(o);
  }

  /** Keeps sending the body of `o`, written up to write offset `offset`, on writable events and pushes. */
  private hold(o: Outgoing, offset: number): void {
    const ex = o.ex;
    o.body.keep?.();
    o.offset = offset;
    o.progressAtMs = o.wroteAtMs = performance.now();
    this.pending.add(o);
    ex.onAbort(() => this.finish(o));
    this.pusher ??= setInterval(() => this.pushAll(), PUSH_INTERVAL_MS).unref();
    // The socket takes more: written now, for one pass's time at most, and the rest in turn with the others
    // (all of it in turn where the engine says so as a write flushes: the requests that came meanwhile go first).
    ex.onWritable(() => {
      this.unflushed.delete(o);
      if (ex.aborted || !this.pending.has(o)) return true;
      // A flush of the body's last bytes ends it here: nothing is left to take turns with.
      if (o.head !== null || (ex.writableOnFlush && ex.writeOffset() < o.body.total)) {
        this.enqueue(o);
        return true;
      }
      // What was written here is what the socket said: a write that failed
      // keeps it watching for the next writable event. Over TLS that is the
      // only way it comes: a write left to a later turn of the event loop,
      // and failing there, was not watched for again.
      o.wroteAtMs = performance.now();
      const [ok, finished] = this.sendRest(o, ex.writeOffset(), o.wroteAtMs + this.passMs());
      if (finished) this.finish(o);
      return ok;
    });
  }

  /**
   * Offers the socket the body from write offset `offset` on: the rest of the
   * current piece, then the next pieces while it takes them whole, up to
   * SLICE_BYTES or the deadline (it is then queued for its next turn). `tryEnd`
   * keeps nothing it could not write; what it did not take is offered again
   * from the new write offset. Returns [more may be written now, finished].
   */
  private sendRest(o: Outgoing, offset: number, deadline = Infinity): [boolean, boolean] {
    const ex = o.ex;
    // The engine still holds bytes of the piece being sent (node): the next piece may not be asked for, nor the piece given back, before they are on the socket.
    if (!ex.holdsNothing()) return [false, false];
    const stopAt = offset + SLICE_BYTES;
    const most = this.short ? SHORT_WRITE : MAX_WRITE;
    try {
      for (;;) {
        if (offset >= stopAt || (deadline !== Infinity && performance.now() > deadline)) {
          this.enqueue(o);
          return [true, false];
        }
        let at = offset - o.base;
        while (at >= o.current.length) {
          const next = o.body.piece(o.index + 1);
          if (next === null) return ex.tryEnd(EMPTY, o.body.total);
          o.index++;
          o.base += o.current.length;
          at -= o.current.length;
          o.current = next;
          o.parked = false;
        }
        const [ok, finished] = ex.tryEnd(o.current.subarray(at, at + most), o.body.total);
        if (!ok || finished) return [ok, finished];
        offset = ex.writeOffset();
      }
    } catch (err) {
      // A body that cannot be produced any further: the client gets a cut-off body, never a wrong one.
      this.log.error({ event: 'body_failed', err }, 'producing a response body failed; closing the connection');
      ex.aborted = true;
      ex.close();
      return [false, true];
    }
  }

  /** Queues `o` to be written more of: its socket takes more, so no writable event would come before. */
  private enqueue(o: Outgoing): void {
    if (o.queued) return;
    o.queued = true;
    // A queue that was empty: the next pass counts the loop's work from now, not from the last pass.
    if (this.queue.push(o) === 1 && !this.draining) this.passEndedMs = performance.now();
    if (!this.draining) {
      this.draining = true;
      setImmediate(this.drain);
    }
  }

  /** One pass over the queue (PASS_MS to MAX_PASS_MS); the rest in the next turn of the event loop. */
  private readonly drain = (): void => {
    this.draining = false;
    this.short = this.answers > 0 && this.answers <= FEW_ANSWERS;
    this.answers = 0;
    const now = performance.now();
    const until = now + Math.max(this.passMs(), Math.min(MAX_PASS_MS, now - this.passEndedMs));
    while (this.queue.length > 0 && performance.now() < until) {
      if (this.unflushed.size >= MAX_UNFLUSHED && this.writesUnderWay() >= MAX_UNFLUSHED) {
        // A flush enqueues its body, which brings the next pass; a write that never flushes stops counting.
        this.retry ??= setTimeout(this.retried, UNFLUSHED_STALE_MS);
        break;
      }
      const o = this.queue.shift()!;
      o.queued = false;
      if (o.ex.aborted || !this.pending.has(o)) continue;
      const ex = o.ex;
      o.wroteAtMs = performance.now();
      ex.cork(() => {
        if (o.head) {
          ex.writeHead(o.head);
          o.head = null;
          o.base = ex.writeOffset();
          o.current = o.body.piece(0) ?? EMPTY;
        }
        const [, finished] = this.sendRest(o, ex.writeOffset(), until);
        if (finished) this.finish(o);
        else if (!ex.holdsNothing()) this.unflushed.add(o);
      });
    }
    this.passEndedMs = performance.now();
    if (this.queue.length > 0 && !this.draining && this.retry === null) {
      this.draining = true;
      setImmediate(this.drain);
    }
  };

  private passMs(): number {
    return this.short ? SHORT_PASS_MS : PASS_MS;
  }

  /** Writes the engine holds that were handed over less than UNFLUSHED_STALE_MS ago. */
  private writesUnderWay(): number {
    const since = performance.now() - UNFLUSHED_STALE_MS;
    let n = 0;
    for (const o of this.unflushed) if (o.wroteAtMs > since) n++;
    return n;
  }

  private readonly retried = (): void => {
    this.retry = null;
    if (this.queue.length > 0 && !this.draining) {
      this.draining = true;
      setImmediate(this.drain);
    }
  };

  /** Keeps a body going that writable events may not (see PUSH_INTERVAL_MS); false when given up. */
  private push(o: Outgoing, nowMs: number): boolean {
    if (o.ex.aborted) return false;
    const offset = o.ex.writeOffset();
    if (offset !== o.offset) {
      o.offset = offset;
      o.progressAtMs = nowMs;
      o.parked = false;
    } else if (nowMs - o.progressAtMs > STALL_LIMIT_MS) {
      return false;
    } else if (!o.parked && o.head === null && nowMs - o.progressAtMs > PARK_AFTER_MS && o.ex.holdsNothing() && o.body.park?.()) {
      // The piece is asked for again, from the same place, when the client reads on.
      o.parked = true;
      o.current = EMPTY;
      o.index--;
    }
    // Bodies that writable events keep going are left to them.
    if (nowMs - o.wroteAtMs >= PUSH_INTERVAL_MS) this.enqueue(o);
    return true;
  }

  private pushAll(): void {
    const now = performance.now();
    for (const o of [...this.pending]) {
      if (this.push(o, now)) continue;
      // Given up: the connection goes too, rather than wait for an idle timeout with a response half sent.
      this.finish(o);
      if (!o.ex.aborted) o.ex.close();
    }
    if (this.pending.size === 0 && this.pusher) {
      clearInterval(this.pusher);
      this.pusher = null;
    }
  }

  /** The body of `o` is sent, given up or aborted: nothing reads it any more. */
  private finish(o: Outgoing): void {
    this.unflushed.delete(o);
    if (!this.pending.delete(o)) return;
    o.ex.onAbort(null);
    o.body.release();
    o.drop();
  }
}

const ERROR_HEADERS: Headers = [['Content-Type', TEXT], ['Cache-Control', 'no-store']];
