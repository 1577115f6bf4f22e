import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

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
 * Stops Node reading a connection's requests, as Node does itself when a
 * client reads none of its answers: `socket.pause()` alone does not stop
 * its parser, which the socket feeds in C++, and no public call does. Node
 * pauses the parser once the read under way is parsed when it finds this
 * flag set, and clears it, and reads on, once the answers it holds are
 * written; so it is set again with each request that waits.
 */
type NodeSocket = Socket & { _paused?: boolean; parser?: { resume(): void } | null };
function stopReading(socket: NodeSocket): void {
  socket._paused = true;
  socket.pause();
}
function readAgain(socket: NodeSocket): void {
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}

/** What the node engine's connections share: whether the service drains (docs/operations.md, Draining). */
export interface ConnectionsState {
  draining: boolean;
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
  private awaited: { settled: (() => void) | null } | null = null;
  /** Requests that arrived behind it, as request and response pairs, from `head` on. */
  private readonly queue: Array<IncomingMessage | ServerResponse> = [];
  private head = 0;
  /** Reading was stopped here, and goes on from here. */
  private stopped = false;
  /** The answer to a request the parser refused, written once every request before it is answered. */
  private refusal: Buffer | null = null;
  /** The response of the newest request. */
  private lastRes: ServerResponse | null = null;
  /** Requests seen, and the bytes read when the newest one was (a refused head's size is what came after). */
  requests = 0;
  bytesAtRequest = 0;
  /** When this connection was accepted or its newest request arrived. */
  lastSeenMs = performance.now();

  constructor(
    readonly socket: Socket,
    readonly state: ConnectionsState,
    /** Serves a request now: its exchange, or null when it was answered in its handler. */
    private readonly serve: (conn: NodeConnection, req: IncomingMessage, res: ServerResponse) => { settled: (() => void) | null } | null,
  ) {
    socket.setTimeout(FIRST_REQUEST_MS);
  }

  /** A request Node parsed: served now, or once the one before it is answered. */
  arrive(req: IncomingMessage, res: ServerResponse): void {
    if (this.requests++ === 0) this.socket.setTimeout(0);
    this.bytesAtRequest = this.socket.bytesRead;
    this.lastSeenMs = performance.now();
    this.lastRes = res;
    if (this.awaited !== null || this.head < this.queue.length) {
      if (this.socket.destroyed) return;
      if (this.queue.length - this.head >= 2 * MAX_QUEUED) {
        this.socket.destroy();
        return;
      }
      this.queue.push(req, res);
      this.stopped = true;
      stopReading(this.socket);
      return;
    }
    this.start(req, res);
  }

  /** A request or response is in progress on this connection. */
  get busy(): boolean {
    return this.awaited !== null || this.head < this.queue.length || (this.lastRes !== null && !this.lastRes.writableFinished);
  }

  /**
   * Answers a request the parser refused with `bytes`, then closes: now, or
   * once every request before it is answered.
   */
  refuse(bytes: Buffer): void {
    if (this.refusal !== null) return;
    this.refusal = bytes;
    if (this.awaited === null && this.head >= this.queue.length) this.refuseWhenWritten();
  }

  private start(req: IncomingMessage, res: ServerResponse): void {
    const awaited = this.serve(this, req, res);
    if (awaited === null) return;
    this.awaited = awaited;
    awaited.settled = this.settled;
  }

  /** The awaited answer came: the requests behind it are served, in a later microtask than the write under way. */
  private readonly settled = (): void => {
    this.awaited = null;
    queueMicrotask(this.serveQueued);
  };

  private readonly serveQueued = (): void => {
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
  };

  /** Writes the refusal once the last response is on the socket, then closes. */
  private refuseWhenWritten(): void {
    const bytes = this.refusal!;
    const last = this.lastRes;
    const write = (): void => {
      if (!this.socket.destroyed && this.socket.writable) this.socket.end(bytes);
    };
    if (last === null || last.writableFinished) write();
    else last.once('close', write);
  }
}

/** The connection of a socket, set when it was accepted. */
const CONNECTION = Symbol('proxylist.connection');
type WithConnection = Socket & { [CONNECTION]?: NodeConnection };
export const connectionOf = (socket: Socket): NodeConnection | undefined => (socket as WithConnection)[CONNECTION];
export const attachConnection = (conn: NodeConnection): void => {
  (conn.socket as WithConnection)[CONNECTION] = conn;
};
