import type { IncomingMessage, ServerResponse } from 'node:http';
import { RATE_NAME, RATE_POLICY_NAME } from '../../access/rate-limit-headers.js';
import type { Address } from '../../access/address.js';
import { Exchange, type RouteAccount } from '../exchange.js';
import type { Head } from '../head.js';
import type { NodeConnection } from './node-connection.js';

const HSTS = ['Strict-Transport-Security', 'max-age=31536000'];
/** While the service drains, every answer closes its connection, and says so (Node then closes it once the answer is written). */
const CLOSE = ['Connection', 'close'];

/** How a head ends, after its own lines: Date then the length (a body), the length then Date (HEAD), Date alone (a 304). */
const BODY = 0;
const HEAD_ONLY = 1;
const EMPTY = 2;
type Ending = typeof BODY | typeof HEAD_ONLY | typeof EMPTY;

/**
 * A head's lines as Node's writeHead takes them, with places for the
 * RateLimit fields, the Date and the length: made once per head, ending,
 * connection and whether the fields are there, and filled in for each
 * answer. writeHead reads the array before it returns, so one array serves
 * every answer of the head.
 */
interface Lines {
  readonly lines: string[];
  readonly rateAt: number;
  readonly dateAt: number;
  readonly lengthAt: number;
}
const linesOf = new WeakMap<Head, Lines[]>();

function lines(h: Head, secure: boolean, close: boolean, rated: boolean, ending: Ending): Lines {
  let all = linesOf.get(h);
  if (all === undefined) linesOf.set(h, (all = []));
  const i = ending * 8 + (rated ? 4 : 0) + (secure ? 2 : 0) + (close ? 1 : 0);
  let l = all[i];
  if (l === undefined) {
    const own = [...h.lines, ...(secure ? HSTS : []), ...(close ? CLOSE : [])];
    const tail = [...(rated ? [RATE_POLICY_NAME, '', RATE_NAME, ''] : []), ...(ending === BODY ? ['Date', '', 'Content-Length', ''] : ending === HEAD_ONLY ? ['Content-Length', '', 'Date', ''] : ['Date', ''])];
    const at = (name: string): number => (tail.includes(name) ? own.length + tail.indexOf(name) + 1 : -1);
    all[i] = l = { lines: [...own, ...tail], rateAt: at(RATE_POLICY_NAME), dateAt: at('Date'), lengthAt: at('Content-Length') };
  }
  return l;
}
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
 * is flushed, and the response is done only when its last byte is. Most
 * last writes are taken by the kernel before `end` returns (nothing is left
 * to write on the socket then), and are done at once, with no copy and
 * nothing held. At most one write (the sender's largest, 512 KB) is held
 * per reader.
 */
export class NodeExchange extends Exchange {
  readonly writableOnFlush = true;
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
    // The answer to a pipelined request waits for the socket behind those before it, and Node says nothing of it when the socket closes first.
    if (this.res.socket === null) this.conn.watchQueued(this.res, aborted);
  }

  cork(write: () => void): void {
    // Node corks a response's socket until the next tick by itself.
    write();
  }

  writeHead(h: Head): void {
    this.h = h;
  }

  /**
   * Writes the head held by writeHead, in uWebSockets.js's order of lines,
   * with the length `total` unless it ends without one. `close`:
   * Connection: close, as while draining, and to a client that
   * half-closed (Node would keep the connection for a head without a
   * Connection line).
   */
  private begin(ending: Ending, total: number, close = this.conn.state.draining || this.conn.socket.readableEnded): void {
    const h = this.h!;
    const rate = this.rate;
    const l = lines(h, this.secure, close, rate !== null, ending);
    if (rate !== null) {
      l.lines[l.rateAt] = rate.policy;
      l.lines[l.rateAt + 2] = rate.value;
    }
    l.lines[l.dateAt] = httpDate();
    if (l.lengthAt >= 0) l.lines[l.lengthAt] = String(total);
    this.res.writeHead(h.code, h.reason, l.lines);
  }

  tryEnd(chunk: Uint8Array, total: number): [boolean, boolean] {
    if (this.unflushed > 0) return [false, false];
    if (this.ended) return [true, true];
    // Gone: its close makes it aborted.
    if (this.res.destroyed) return [false, false];
    if (this.h !== null) {
      this.begin(BODY, total);
      this.h = null;
    }
    this.written += chunk.length;
    if (this.written < total) {
      this.unflushed++;
      this.res.write(chunk, this.flushed);
      return [false, false];
    }
    this.ended = true;
    this.res.end(chunk);
    // All of it on the socket already (Node 20 says the response finished; later lines say so a tick later, with nothing left to write): Node holds nothing of it.
    if (this.res.writableFinished || this.res.socket?.writableLength === 0) return [true, true];
    this.unflushed++;
    this.res.once('finish', this.flushed);
    return [false, false];
  }

  writeOffset(): number {
    return this.written;
  }

  onWritable(more: () => boolean): void {
    this.more = more;
  }

  endHead(total: number): void {
    this.begin(HEAD_ONLY, total);
    this.res.end();
  }

  endEmpty(): void {
    this.begin(EMPTY, 0);
    this.res.end();
  }

  endAndClose(body: Uint8Array): void {
    this.begin(BODY, body.length, true);
    this.res.end(body);
  }

  close(): void {
    this.res.destroy();
  }

  peer(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  /** Read once per connection: every request of a key with a subnet limit reads it. */
  override peerAddress(): Address | null {
    const conn = this.conn;
    if (conn.peerAddress === undefined) conn.peerAddress = super.peerAddress();
    return conn.peerAddress;
  }

  holdsNothing(): boolean {
    return this.unflushed === 0;
  }
}
