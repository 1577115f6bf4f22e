import type { IncomingMessage, ServerResponse } from 'node:http';
import { Exchange, type RouteAccount } from '../exchange.js';
import type { Head } from '../head.js';
import type { NodeConnection } from './node-connection.js';

const HSTS = ['Strict-Transport-Security', 'max-age=31536000'];
const NONE: string[] = [];
/** While the service drains, every answer closes its connection, and says so (Node then closes it once the answer is written). */
const CLOSE = ['Connection', 'close'];
const DATE = 'Date';
/**
 * A body's last write up to this long is copied rather than held until it
 * is on the socket: the copy costs less than keeping the response pending.
 */
const COPIED_BYTES = 16 * 1024;

/** The Date header's value, made once a second. */
let dateSecond = -1;
let dateText = '';
export function httpDate(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(s * 1000).toUTCString();
  }
  return dateText;
}

/**
 * An exchange on Node's http module, with uWebSockets.js's write model
 * (exchange.ts). The head is written with the body's length, the Date and
 * the lines in the order uWebSockets.js gives them, so that both engines
 * send the same bytes (docs/operations.md, Where it runs).
 *
 * Node keeps a reference to what it is given until it is on the socket,
 * and a body's bytes may be pooled and reused once its reader moves on: so
 * one write at a time is outstanding, the socket "takes more" only once it
 * is flushed, and the response is done only when its last byte is, unless
 * that last write is small enough to copy. At most one write (the sender's
 * largest, 512 KB) is held per reader.
 */
export class NodeExchange extends Exchange {
  private h: Head | null = null;
  /** Body bytes handed to Node. */
  private written = 0;
  /** Writes handed to Node and not yet on the socket. */
  private unflushed = 0;
  private ended = false;
  private more: (() => boolean) | null = null;
  /** Made for the first write that is not copied: most answers never need it. */
  private flushedHook: ((err?: Error | null) => void) | null = null;
  private get flushed(): (err?: Error | null) => void {
    return (this.flushedHook ??= (err) => {
      this.unflushed--;
      // A write that failed: the connection is gone, and its close says so.
      if (err || this.aborted || this.unflushed > 0 || this.more === null) return;
      this.more();
    });
  }

  /** Called once when an answer that came after the handler is given (node-connection.ts serves what waits behind it then). */
  settled: (() => void) | null = null;

  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, head: boolean, secure: boolean, account: RouteAccount, private readonly conn: NodeConnection) {
    super(head, secure, account);
  }

  override answer(status: string, bytes: number): void {
    super.answer(status, bytes);
    const settled = this.settled;
    if (settled === null) return;
    this.settled = null;
    settled();
  }

  protected watchAbort(aborted: () => void): void {
    this.res.once('close', () => {
      if (!this.res.writableFinished) aborted();
    });
  }

  cork(write: () => void): void {
    // Node corks a response's socket until the next tick by itself.
    write();
  }

  writeHead(h: Head): void {
    this.h = h;
  }

  /**
   * Writes the head held by writeHead, with `last` after the Date
   * (uWebSockets.js's order), `first` before it. `close`: Connection: close,
   * as while draining, and to a client that half-closed (Node would keep
   * the connection for a head without a Connection line).
   */
  private begin(first: readonly string[], last: readonly string[], close = this.conn.state.draining || this.conn.socket.readableEnded): void {
    const h = this.h!;
    const lines = h.lines.concat(this.secure ? HSTS : NONE, close ? CLOSE : NONE, first, DATE, httpDate(), last);
    this.res.writeHead(h.code, h.reason, lines);
  }

  tryEnd(chunk: Uint8Array, total: number): [boolean, boolean] {
    if (this.unflushed > 0) return [false, false];
    if (this.ended) return [true, true];
    // Gone: its close makes it aborted.
    if (this.res.destroyed) return [false, false];
    if (this.h !== null) {
      this.begin([], ['Content-Length', String(total)]);
      this.h = null;
    }
    this.written += chunk.length;
    if (this.written >= total && chunk.length <= COPIED_BYTES) {
      // A last write this small is copied: Node holds bytes of its own, and the response is done at once.
      this.ended = true;
      this.res.end(Buffer.from(chunk));
      return [true, true];
    }
    this.unflushed++;
    if (this.written >= total) {
      this.ended = true;
      this.res.end(chunk, this.flushed);
    } else {
      this.res.write(chunk, this.flushed);
    }
    return [false, false];
  }

  writeOffset(): number {
    return this.written;
  }

  onWritable(more: () => boolean): void {
    this.more = more;
  }

  endHead(total: number): void {
    this.begin(['Content-Length', String(total)], []);
    this.res.end();
  }

  endEmpty(): void {
    this.begin([], []);
    this.res.end();
  }

  endAndClose(body: Uint8Array): void {
    this.begin(NONE, ['Content-Length', String(body.length)], true);
    this.res.end(body);
  }

  close(): void {
    this.res.destroy();
  }

  peer(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  holdsNothing(): boolean {
    return this.unflushed === 0;
  }
}
