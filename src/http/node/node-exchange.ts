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
 * What Node's ServerResponse keeps of a head it was given (its
 * `_storeHeader`): the text it sends before the first body bytes, and
 * whether the connection ends with this answer. Node has kept these
 * fields, and sent `_header` as latin1, since its first lines.
 */
interface HeadState {
  _header: string | null;
  _headerSent: boolean;
  _last: boolean;
  _hasBody: boolean;
  shouldKeepAlive: boolean;
  _expect_continue?: boolean;
  _sent100?: boolean;
}

/**
 * A head's text up to the lines each answer fills in, as Node sends it:
 * one char per byte of the UTF-8 that uWebSockets.js sends. Made once per
 * head, and per whether it is secure and closes.
 */
const startsOf = new WeakMap<Head, string[]>();
function headStart(h: Head, secure: boolean, close: boolean): string {
  let all = startsOf.get(h);
  if (all === undefined) startsOf.set(h, (all = []));
  const i = (secure ? 2 : 0) + (close ? 1 : 0);
  return (all[i] ??= `HTTP/1.1 ${Buffer.from(h.bytes.buffer, h.bytes.byteOffset, h.bytes.byteLength).toString('latin1')}\r\n${secure ? `${HSTS[0]}: ${HSTS[1]}\r\n` : ''}${close ? `${CLOSE[0]}: ${CLOSE[1]}\r\n` : ''}`);
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
   *
   * To an HTTP/1.1 client the head's text is handed to Node whole, as
   * Node's writeHead leaves it: Node would otherwise check and join each
   * of the service's own lines again for every answer, as much work as the
   * rest of the request's JavaScript. HTTP/1.1 keeps the connection
   * without saying so, as uWebSockets.js; an HTTP/1.0 client gets Node's
   * writeHead, which adds the Connection line such a client needs.
   */
  private begin(ending: Ending, total: number, close = this.conn.state.draining || this.conn.socket.readableEnded): void {
    const h = this.h!;
    const rate = this.rate;
    const date = httpDate();
    if (this.req.httpVersionMinor !== 1) {
      const lines = [...h.lines, ...(this.secure ? HSTS : []), ...(close ? CLOSE : []), ...(rate !== null ? [RATE_POLICY_NAME, rate.policy, RATE_NAME, rate.value] : [])];
      lines.push(...(ending === BODY ? ['Date', date, 'Content-Length', String(total)] : ending === HEAD_ONLY ? ['Content-Length', String(total), 'Date', date] : ['Date', date]));
      this.res.sendDate = false;
      this.res.writeHead(h.code, h.reason, lines);
      return;
    }
    let text = headStart(h, this.secure, close);
    if (rate !== null) text += `${RATE_POLICY_NAME}: ${rate.policy}\r\n${RATE_NAME}: ${rate.value}\r\n`;
    text += ending === BODY ? `Date: ${date}\r\nContent-Length: ${total}\r\n\r\n` : ending === HEAD_ONLY ? `Content-Length: ${total}\r\nDate: ${date}\r\n\r\n` : `Date: ${date}\r\n\r\n`;
    const res = this.res;
    const state = res as unknown as HeadState;
    res.statusCode = h.code;
    res.statusMessage = h.reason;
    // As Node's writeHead: no body after these, and no keeping a connection whose client still waits to send one.
    if (h.code === 204 || h.code === 304) state._hasBody = false;
    if (state._expect_continue === true && state._sent100 !== true) state.shouldKeepAlive = false;
    state._last = close || !state.shouldKeepAlive;
    state._header = text;
    state._headerSent = false;
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
