import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Address } from '../../access/address.js';
import type { LingerEnd, SocketPhase } from '../engine.js';
import { readAgain, stopReading } from './read-stop.js';

/**
 * How long a connection may stay silent before its first request, as
 * uWebSockets.js closes a silent socket: Node's head timeout starts only
 * with a request's first byte, and a connection that sends none would
 * otherwise hold its descriptor for ever.
 */
export const FIRST_REQUEST_MS = 10_000;

/**
 * The most requests that wait behind one still to be answered: Node parses
 * a whole read before it stops (a read of 64 KiB holds a few thousand short
 * requests). Past this a connection is closed: the reading did not stop.
 */
const MAX_QUEUED = 4096;
/**
 * After a refusal is written and the connection half-closed, what the
 * client still sends is read and dropped for this long and up to this many
 * bytes (nginx's lingering close): closing at once with unread bytes resets
 * the connection, and the reset can reach the client before it reads the
 * refusal (a head of 100 KB over TLS). Past either bound the socket is
 * destroyed.
 */
export const LINGER_MS = 5000;
export const LINGER_BYTES = 4 * 1024 * 1024;

/**
 * When the 100 (Continue) probes go to a client that sent its last byte
 * while an answer is still to come, in ms after it did: the first draws a
 * reset from a client that has gone, and the next write after the reset
 * arrives (a round trip later: microseconds on loopback, up to a few
 * hundred ms across the world) fails.
 */
const GONE_PROBES_MS = [0, 10, 50, 250];

/** An exchange whose answer comes after its handler returned (node-exchange.ts). */
interface Awaited {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  settled: (() => void) | null;
}

/** What the node engine's connections share: whether the service drains (docs/operations.md, Draining), and which are open. */
export interface ConnectionsState {
  draining: boolean;
  readonly open: Set<NodeConnection>;
  /** Counts a lingering close as it ends. */
  readonly lingered: (end: LingerEnd) => void;
  /** Counts an error on a socket, by what the connection was doing. */
  readonly failed: (phase: SocketPhase) => void;
  /**
   * Reading a connection's requests can be stopped here (read-stop.ts):
   * false where the check at start found it does not work, and a request
   * pipelined behind a held one then closes its connection.
   */
  readStops: boolean;
}

/**
 * One client connection of the node engine. Its requests are served one
 * after the other while an answer is still to come: a request whose
 * handler returned without an answer (`wait`, a Redis limiter, a turn)
 * holds the ones the client pipelined behind it, which are not served, and
 * the socket is not read, until it is answered (docs/api.md, ETag and
 * wait: at most one held request per connection). Node parses a read's
 * worth of requests before it stops: so many wait here, never more.
 *
 * A request Node's parser refused after others is answered once they are.
 */
export class NodeConnection {
  /** The exchange whose answer is still to come; null when none is. */
  private awaited: Awaited | null = null;
  /** Requests that arrived behind it, as request and response pairs, from `head` on (made for the first). */
  private queue: Array<IncomingMessage | ServerResponse> = NO_QUEUE;
  private head = 0;
  /** Reading was stopped here, and goes on from here. */
  private stopped = false;
  /** The answer to a request the parser refused, written once every answer before it is on the socket. */
  private refusal: Buffer | null = null;
  /** A refusal is due: what arrives is dropped (LINGER_MS once it is written, LINGER_BYTES), counted from this many bytes read; -1 before. */
  private lingerFrom = -1;
  private lingerEnded = false;
  /**
   * Answers Node holds until the socket is theirs (pipelined behind one
   * being written), and what to call if the socket closes first: Node
   * drops them then without a 'close' (node-exchange.ts).
   */
  private queuedAnswers: Map<ServerResponse, () => void> | null = null;
  /** Requests seen. */
  requests = 0;
  /** When this connection was accepted or its newest request arrived. */
  lastSeenMs = performance.now();
  /** When the timeouts' sweep first found it with nothing in progress since then; -1 while something is (node-engine.ts). */
  quietFromMs = this.lastSeenMs;
  /** The TCP peer's address, once a request read it (node-exchange.ts). */
  peerAddress: Address | null | undefined = undefined;
  /** Node handed the socket over (CONNECT): no HTTP is read on it any more. */
  handedOver = false;

  constructor(
    readonly socket: Socket,
    readonly state: ConnectionsState,
    /** Serves a request now: its exchange, or null when it was answered in its handler. */
    private readonly serve: (conn: NodeConnection, req: IncomingMessage, res: ServerResponse) => Awaited | null,
  ) {
    socket.setTimeout(FIRST_REQUEST_MS);
    (socket as WithConnection)[CONNECTION] = this;
    state.open.add(this);
    // From now until it is destroyed, an error on the socket closes this connection and is counted, never thrown (Node takes its own listener off when it hands a socket over on CONNECT).
    socket.on('error', failed);
    socket.on('end', peerEnded);
    socket.on('close', closed);
  }

  /** What the connection was doing, for the count of socket errors. */
  phase(): SocketPhase {
    if (this.handedOver) return 'tunnel';
    if (this.lingerFrom >= 0) return 'linger';
    if (this.awaited !== null) return 'held';
    if (this.writing() !== null) return 'answer';
    return 'head';
  }

  /** A request Node parsed: served now, or once the one before it is answered. */
  arrive(req: IncomingMessage, res: ServerResponse): void {
    if (this.requests++ === 0) this.socket.setTimeout(0);
    this.lastSeenMs = performance.now();
    if (this.awaited !== null || this.head < this.queue.length) {
      if (this.socket.destroyed) return;
      if (this.queue.length - this.head >= 2 * MAX_QUEUED) {
        this.socket.destroy();
        return;
      }
      // Where reading cannot be stopped, such a client is closed, as uWebSockets.js closes it.
      if (!this.state.readStops) {
        this.socket.destroy();
        return;
      }
      if (this.queue === NO_QUEUE) this.queue = [];
      this.queue.push(req, res);
      this.stopped = true;
      stopReading(this.socket);
      return;
    }
    this.start(req, res);
  }

  /** `aborted` runs if the socket closes before `res`, which waits for it, is written. */
  watchQueued(res: ServerResponse, aborted: () => void): void {
    const answers = (this.queuedAnswers ??= new Map());
    answers.set(res, aborted);
    res.once('finish', () => answers.delete(res));
  }

  /** The socket closed: answers still waiting for it are aborted. */
  closed(): void {
    this.state.open.delete(this);
    const answers = this.queuedAnswers;
    if (answers === null) return;
    this.queuedAnswers = null;
    for (const aborted of answers.values()) aborted();
  }

  /** A request or response is in progress on this connection: one to answer, or an answer not all on the socket. */
  get busy(): boolean {
    return this.awaited !== null || this.head < this.queue.length || this.writing() !== null;
  }

  /**
   * The response Node is writing on the socket, until all of it is on the
   * socket: Node's own mark, which it clears as the response finishes and
   * then sets to the next one pipelined behind it, if any (Node answers in
   * order). Nothing here holds a response, so each answer's objects die
   * young: holding the newest one per connection made a crowd of clients'
   * responses outlive the young generation's collections.
   */
  private writing(): ServerResponse | null {
    return this.socket.destroyed ? null : ((this.socket as WithMessage)._httpMessage ?? null);
  }

  /**
   * Answers a request the parser refused with `bytes`, then closes: now, or
   * once every request before it is answered.
   */
  refuse(bytes: Buffer): void {
    if (this.refusal !== null) return;
    this.refusal = bytes;
    // What the client sends from here on is dropped, within LINGER_BYTES, while the answers before the refusal are written too.
    this.lingerFrom = this.socket.bytesRead;
    this.refuseWhenWritten();
  }

  private start(req: IncomingMessage, res: ServerResponse): void {
    const awaited = this.serve(this, req, res);
    if (awaited === null) return;
    this.awaited = awaited;
    awaited.settled = () => this.settled();
  }

  /**
   * The client sent its last byte. It may only have half-closed, and read
   * on: its answers are still given (Node's http server is told so). Or it
   * may have gone, which only writes can tell: an answer still to come is
   * preceded by 100 (Continue) lines, which an HTTP/1.1 client reads past
   * (RFC 9110 15.2) and a client that has gone answers with a reset; the
   * next one then fails, and the request is let go, with whatever work it
   * started (a compression, docs/operations.md, Memory).
   */
  peerEnded(): void {
    this.probeFrom(0);
  }

  /** Probe `i` of GONE_PROBES_MS now, and the next one after its delay while the answer is still to come. */
  private probeFrom(i: number): void {
    if (!this.probe() || i + 1 >= GONE_PROBES_MS.length) return;
    setTimeout(() => this.probeFrom(i + 1), GONE_PROBES_MS[i + 1] - GONE_PROBES_MS[i]).unref();
  }

  /** A 100 (Continue) ahead of the answer still to come, if one is; whether one was written. */
  private probe(): boolean {
    const awaited = this.awaited;
    if (awaited === null || awaited.req.httpVersionMinor !== 1 || this.socket.destroyed) return false;
    awaited.res.writeContinue();
    return true;
  }

  /** The awaited answer came: the requests behind it are served, in a later microtask than the write under way. */
  private settled(): void {
    this.awaited = null;
    queueMicrotask(() => this.serveQueued());
  }

  private serveQueued(): void {
    while (this.awaited === null && this.head < this.queue.length) {
      if (this.socket.destroyed) break;
      const req = this.queue[this.head] as IncomingMessage;
      const res = this.queue[this.head + 1] as ServerResponse;
      this.queue[this.head] = this.queue[this.head + 1] = undefined as never;
      this.head += 2;
      this.start(req, res);
    }
    if (this.head >= this.queue.length) {
      this.queue.length = this.head = 0;
      if (this.awaited !== null) return;
      if (this.refusal !== null) return this.refuseWhenWritten();
      if (this.stopped) {
        this.stopped = false;
        readAgain(this.socket);
      }
    }
  }

  /** Writes the refusal once every answer before it is on the socket, then closes. */
  private refuseWhenWritten(): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    // The requests before it are answered first; when the last one is, serveQueued looks again.
    if (this.awaited !== null || this.head < this.queue.length) return;
    const current = this.writing();
    if (current !== null) current.once('close', () => this.refuseWhenWritten());
    else {
      this.socket.end(this.refusal!);
      const limit = setTimeout(() => this.stopLingering('time'), LINGER_MS);
      this.socket.once('close', () => {
        clearTimeout(limit);
        this.stopLingering('client');
      });
    }
  }

  /** Ends a lingering close, counted once by how it ended. */
  private stopLingering(end: LingerEnd): void {
    if (this.lingerEnded) return;
    this.lingerEnded = true;
    this.state.lingered(end);
    this.socket.destroy();
  }

  /**
   * Bytes arrived after a refusal (Node's parser, which has failed, may
   * report a later read as another error): dropped, or the socket destroyed
   * once the client sent more than LINGER_BYTES. False before a refusal.
   */
  lingered(): boolean {
    if (this.lingerFrom < 0) return false;
    if (this.socket.bytesRead - this.lingerFrom > LINGER_BYTES) this.stopLingering('bytes');
    return true;
  }
}

/** The connection of a socket, set when it was accepted. */
const CONNECTION = Symbol('proxylist.connection');
type WithConnection = Socket & { [CONNECTION]?: NodeConnection };
/** Node's http server marks a socket with the response it is writing there (`_httpMessage`), from Node's first lines on. */
type WithMessage = Socket & { _httpMessage?: ServerResponse | null };
export const connectionOf = (socket: Socket): NodeConnection | undefined => (socket as WithConnection)[CONNECTION];

/** A socket's 'end' and 'close' listeners, one each for all: no closure per connection. */
function peerEnded(this: Socket): void {
  connectionOf(this)?.peerEnded();
}
function failed(this: Socket): void {
  const conn = connectionOf(this);
  if (conn) conn.state.failed(conn.phase());
  this.destroy();
}
function closed(this: Socket): void {
  connectionOf(this)?.closed();
}

/** The queue of a connection that has not needed one. */
const NO_QUEUE: Array<IncomingMessage | ServerResponse> = [];
