import type { Head } from './head.js';
import type { HttpResponse } from './uws.js';

/** On every HTTPS answer (docs/operations.md, HTTPS): browsers come back over HTTPS only, for a year. */
const HSTS_NAME = Buffer.from('Strict-Transport-Security');
const HSTS_VALUE = Buffer.from('max-age=31536000');

/** What is done with each answer of a route: counted, and logged with --access-log. */
export interface RouteAccount {
  answered(ex: Exchange): void;
}

/**
 * One request and its response, for as long as either lives. uWebSockets.js
 * forbids touching a response after its client went away, and a request
 * dies when its handler returns: what a later answer needs is kept here,
 * never on the response object or in module variables.
 */
export class Exchange {
  /** The client went away: nothing may touch `res` any more. */
  aborted = false;
  /** The status line written, once answered. */
  status = '';
  /** The body length announced. */
  bytes = 0;
  /** The name the access log gives the key, once known. */
  keyLabel: string | null = null;
  /**
   * The request's handler is running (the exchange is made there, and the
   * guard around it clears this when it returns): uWebSockets.js corked the
   * socket before it called the handler, so what is written meanwhile goes
   * out in one go when the handler returns.
   */
  inHandler = true;
  /** Runs once if the client goes away before the response is done. */
  private abortHook: (() => void) | null = null;
  private watched = false;

  constructor(
    readonly res: HttpResponse,
    readonly head: boolean,
    /** Over HTTPS. */
    readonly secure: boolean,
    readonly account: RouteAccount,
    readonly startedMs: number,
    /** Method and path, read only for the access log. */
    readonly method: string,
    readonly path: string,
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
    this.res.onAborted(() => {
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
   * already is; later, `cork` does it (and calls back into JavaScript).
   */
  write(write: () => void): void {
    if (this.inHandler) write();
    else this.res.cork(write);
  }

  /** Writes the status and headers of `h`, and HSTS over HTTPS. */
  writeHead(h: Head): void {
    this.res.writeStatus(h.bytes);
    if (this.secure) this.res.writeHeader(HSTS_NAME, HSTS_VALUE);
  }

  /** Records the answer (status, announced length) and accounts for it. */
  answer(status: string, bytes: number): void {
    // The work a hook would stop has settled; uWebSockets.js keeps the abort handler until the connection's next response.
    this.abortHook = null;
    this.status = status;
    this.bytes = bytes;
    this.account.answered(this);
  }
}
