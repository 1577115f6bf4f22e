import { parseAddress, type Address } from '../access/address.js';
import type { RateFields } from '../access/rate-limit-headers.js';
import type { Head } from './head.js';

/** What is done with each answer of a route: counted, and logged with --access-log. */
export interface RouteAccount {
  answered(ex: Exchange): void;
}

/**
 * One request and its response, for as long as either lives, made by the
 * engine that received the request (http/engine.ts). A response must not be
 * touched after its client went away, and a request dies when its handler
 * returns: what a later answer needs is kept here, never on the engine's
 * objects or in module variables.
 *
 * The writes follow uWebSockets.js's model, which both engines give: a
 * write offset of body bytes taken, `tryEnd` that says whether the socket
 * takes more, and a writable event when it does again.
 */
export abstract class Exchange {
  /** The client went away: nothing may touch the response any more. */
  aborted = false;
  /** The status line written, once answered. */
  status = '';
  /** The body length announced. */
  bytes = 0;
  /** The key that asked, once known: the access log names it (its label is made only then). */
  key: { readonly label: string } | null = null;
  /**
   * The RateLimit fields of the key that asked, once the limiter decided:
   * every head written for this request ends with them. Heads themselves are
   * the answer's and shared by whoever asks (docs/design.md, Who asks is not what is asked).
   */
  rate: RateFields | null = null;
  /** Method and path, read only for the access log. */
  method = '';
  path = '';
  /**
   * The request's handler is running (the guard around it clears this when
   * it returns): the engine corked the socket before it called the handler,
   * so what is written meanwhile goes out in one go when the handler returns.
   */
  inHandler = true;
  readonly startedMs = performance.now();
  /** Runs once if the client goes away before the response is done. */
  private abortHook: (() => void) | null = null;
  private watched = false;

  constructor(
    readonly head: boolean,
    /** Over HTTPS. */
    readonly secure: boolean,
    readonly account: RouteAccount,
  ) {}

  get answered(): boolean {
    return this.status !== '';
  }

  /** The answer comes after the handler returns (`onAbort` was called). */
  get later(): boolean {
    return this.watched;
  }

  /**
   * From now on the response may end later than the handler: the client may
   * go away meanwhile, and `hook` (replacing any earlier one) then runs.
   */
  onAbort(hook: (() => void) | null): void {
    this.abortHook = hook;
    if (this.watched) return;
    this.watched = true;
    this.watchAbort(() => {
      this.aborted = true;
      const h = this.abortHook;
      this.abortHook = null;
      h?.();
    });
  }

  /**
   * The answer comes after the handler returns, once the work that `start`
   * begins settles: `settled` then runs with its outcome, unless the client
   * went away meanwhile. `start` may return what to call if the client goes
   * away first, so that work no one else waits for stops.
   */
  defer<T>(start: (settle: (outcome: T) => void) => (() => void) | void, settled: (outcome: T) => void): void {
    const stop = start((outcome) => {
      if (!this.aborted) settled(outcome);
    });
    if (!this.answered) this.onAbort(stop ?? null);
  }

  /**
   * Runs `write`, which writes to the response, with the socket corked:
   * the status, headers and body go out together. Inside the handler it
   * already is; later, `cork` does it.
   */
  write(write: () => void): void {
    if (this.inHandler) write();
    else this.cork(write);
  }

  /** Records the answer (status, announced length) and accounts for it. */
  answer(status: string, bytes: number): void {
    // The work a hook would stop has settled; an engine may keep the abort handler until the connection's next response.
    this.abortHook = null;
    this.status = status;
    this.bytes = bytes;
    this.account.answered(this);
  }

  /** Calls `aborted` once if the client goes away before the response is done. */
  protected abstract watchAbort(aborted: () => void): void;
  /** Runs `write` with the socket corked. */
  abstract cork(write: () => void): void;
  /** The status and headers of `h` (and HSTS over HTTPS), then the RateLimit fields of `rate`, before any other write. */
  abstract writeHead(h: Head): void;
  /**
   * Offers `chunk`, the body's next bytes, for a body of `total` bytes. The
   * socket may take part of it: the write offset says how much.
   * Returns [the socket takes more now, the response is done].
   */
  abstract tryEnd(chunk: Uint8Array, total: number): [boolean, boolean];
  /** Body bytes taken so far. */
  abstract writeOffset(): number;
  /** `more` runs each time the socket takes more again; it returns whether it wrote all it had. */
  abstract onWritable(more: () => boolean): void;
  /**
   * The engine says the socket takes more when a write it was given is on
   * the socket (node), not when the event loop finds the socket writable
   * (uWebSockets.js). A write the kernel takes at once says so before the
   * loop reads anything else, so writing more from there would chain a
   * whole body's writes ahead of every request waiting to be read.
   */
  abstract readonly writableOnFlush: boolean;
  /** Ends a HEAD answer: its length, no body. */
  abstract endHead(total: number): void;
  /** Ends an answer without body or length (a 304). */
  abstract endEmpty(): void;
  /** Ends with `body`, then closes the connection. */
  abstract endAndClose(body: Uint8Array): void;
  /** Closes the connection at once. */
  abstract close(): void;
  /** The TCP peer's address as text. */
  abstract peer(): string;
  /** The TCP peer's address as numbers, or null when it cannot be read. */
  peerAddress(): Address | null {
    return parseAddress(this.peer());
  }
  /** No byte the body lent is still held by the engine: the body may give back what it holds. */
  abstract holdsNothing(): boolean;
}
