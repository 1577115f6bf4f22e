import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { MAX_HEAD_BYTES, MAX_HEADER_LINES, type App, type Engine, type ListenSocket, type Refusal, type Route, type Routes, type Serve } from '../engine.js';
import { TLS12_CIPHERS, type TlsPair } from '../tls-pair.js';
import type { Head } from '../head.js';
import { connectionOf, NodeConnection, type ConnectionsState } from './node-connection.js';
import { httpDate, NodeExchange } from './node-exchange.js';
import { checkReadStop, type ReadStopCheck } from './read-stop.js';
import { NodeRequest } from './node-request.js';

/**
 * What Node's http server takes of clients (docs/operations.md, Where it
 * runs): request heads up to the 64 KiB uWebSockets.js is given; a head
 * must be whole within 10 s (slowloris), a request within 30 s, a TLS
 * handshake within 10 s; a connection idle between requests is closed
 * after 10 s, as uWebSockets.js closes one (with no buffer added: Node
 * 24.6 and later add one of a second by default), and so is one that
 * sends no request at all (node-connection.ts). Node's own checks of these
 * stop while its server does not listen: the service's sweep (QUIET_MS)
 * runs whatever Node does.
 */
const SERVER_OPTIONS = {
  maxHeaderSize: MAX_HEAD_BYTES,
  // The service answers it, as the catalogue words it (below).
  requireHostHeader: false,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 10_000,
  keepAliveTimeoutBuffer: 0,
  connectionsCheckingInterval: 1000,
  noDelay: true,
  // A request without a body (every GET and HEAD a client sends) skips the stream life of an incoming body, which no route reads: Node 24 and later; older lines ignore it.
  optimizeEmptyRequests: true,
} as const;
/**
 * A connection with nothing in progress (no request being answered or
 * held, no answer being written) for this long is closed: a head not
 * whole, an idle keep-alive, a client that sent nothing. Swept each
 * SWEEP_MS, so it closes between QUIET_MS and QUIET_MS + SWEEP_MS.
 */
const QUIET_MS = 10_000;
const SWEEP_MS = 500;
const TLS_CONTEXT = { ciphers: TLS12_CIPHERS, minVersion: 'TLSv1.2' } as const;
// allowHalfOpen: a client's half-close reaches the http layer, which answers it (as over plain HTTP, where Node's http server sets it).
const TLS_OPTIONS = { ...TLS_CONTEXT, handshakeTimeout: 10_000, allowHalfOpen: true } as const;

/** SO_REUSEPORT from Node's listen(): 22.12 and later in the 22 line, 23.1 and later. */
function hasReusePort(): boolean {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/** The error codes of Node's parser, as the service names why it refused. */
const REFUSALS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: 'headTooLarge',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'badFraming',
  HPE_INVALID_CONTENT_LENGTH: 'badFraming',
  HPE_INVALID_TRANSFER_ENCODING: 'badFraming',
  HPE_INVALID_URL: 'badTarget',
};

function hasHost(raw: string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') return true;
  return false;
}

/** The read a head overflowed in has more line breaks than a head may have lines. */
function tooManyLines(read: Buffer | undefined): boolean {
  if (!read) return false;
  let n = 0;
  for (let i = read.indexOf(10); i >= 0 && n <= MAX_HEADER_LINES; i = read.indexOf(10, i + 1)) n++;
  return n > MAX_HEADER_LINES;
}

/** An absolute-form target's scheme and authority (RFC 9112 3.2.2): served as the path it names. */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/** The bytes of an answer written straight to the socket: its head, Connection: close, Date and the length, as uWebSockets.js orders them. */
function closingAnswer({ head: h, body }: { head: Head; body: Uint8Array }): Buffer {
  let text = `HTTP/1.1 ${h.status}\r\n`;
  for (let i = 0; i < h.lines.length; i += 2) text += `${h.lines[i]}: ${h.lines[i + 1]}\r\n`;
  text += `Connection: close\r\nDate: ${httpDate()}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(text, 'latin1'), body]);
}

/** What the engine found it cannot do on this Node, once its first app listens. */
const limitsFound: string[] = [];
let limitsNoted = false;

class NodeApp implements App {
  private readonly server: Server | HttpsServer;
  private readonly state: ConnectionsState;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly routes: Routes, tls: TlsPair | null) {
    // Reading stops behind a held request once the check at start says it can (listen).
    this.state = { draining: false, open: new Set(), lingered: (end) => routes.lingered(end), failed: (phase) => routes.socketFailed(phase), readStops: false };
    const secure = tls !== null;
    const server = (this.server = tls ? createHttpsServer({ ...SERVER_OPTIONS, ...TLS_OPTIONS, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key) }) : createHttpServer(SERVER_OPTIONS));
    // Where the option is a property only (Node 24.6 and later read it from the server).
    if ('keepAliveTimeoutBuffer' in server) (server as { keepAliveTimeoutBuffer: number }).keepAliveTimeoutBuffer = 0;
    // Node's own switch, a server property no option sets: a client that half-closes after its request still gets its answer. Where it is gone, such a client gets none, as on uWebSockets.js.
    if (typeof (server as { httpAllowHalfOpen?: unknown }).httpAllowHalfOpen === 'boolean') (server as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS).unref();
    // Node 20's parser takes any number of lines, and keeps this many (later lines count as too many).
    server.maxHeadersCount = MAX_HEADER_LINES + 1;
    const table = new Map<string, Route>(routes.paths.map((r) => [r.path, r]));
    const refuse = (kind: Refusal, req: IncomingMessage, res: ServerResponse, conn: NodeConnection): null => {
      const answer = routes.refused(kind);
      const ex = new NodeExchange(req, res, false, secure, routes.other.account, conn);
      ex.writeHead(answer.head);
      ex.endAndClose(answer.body);
      return null;
    };
    const serve = (conn: NodeConnection, req: IncomingMessage, res: ServerResponse): NodeExchange | null => {
      if (req.rawHeaders.length > 2 * MAX_HEADER_LINES) return refuse('headLines', req, res, conn);
      // RFC 9112 3.2: an HTTP/1.1 request without Host is refused, and the connection closed.
      if (req.httpVersionMinor === 1 && !hasHost(req.rawHeaders)) return refuse('badHost', req, res, conn);
      let target = req.url!;
      if (target.charCodeAt(0) !== 47 /* / */) target = target.replace(ABSOLUTE_FORM, '') || '/';
      const q = target.indexOf('?');
      const r = table.get(q < 0 ? target : target.slice(0, q)) ?? routes.other;
      const method = req.method;
      const head = method === 'HEAD';
      const handler: Serve = method === 'GET' ? r.get : head ? r.head : r.other;
      const ex = new NodeExchange(req, res, head, secure, r.account, conn);
      handler(ex, new NodeRequest(req, target, q));
      return ex.answered || ex.aborted ? null : ex;
    };
    server.on(secure ? 'secureConnection' : 'connection', (socket: Socket) => new NodeConnection(socket, this.state, serve));
    // Before its handshake a TLS client's errors come to clientError (tlsClientError); the raw socket gets a listener of its own all the same.
    if (secure) server.on('connection', (socket: Socket) => socket.on('error', handshakeFailed));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => connectionOf(req.socket)!.arrive(req, res));
    // Expect with anything but 100-continue (RFC 9110 10.1.1): 417, then a close; Node would answer it without a body.
    server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => refuse('expectation', req, res, connectionOf(req.socket)!));
    // CONNECT: no tunnel here. Node hands the socket over without a response to write to, and without its error listener (the connection keeps its own).
    server.on('connect', (_req: IncomingMessage, socket: Socket) => {
      const conn = connectionOf(socket);
      if (conn) conn.handedOver = true;
      this.refuseOn(socket, 'method');
    });
    // A request the parser refused gets the service's answer once those before it have theirs, then the connection closes.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      const code = err.code ?? '';
      // No connection yet: a TLS handshake that failed or timed out (https hands its errors here), with nothing to answer in.
      const conn = connectionOf(socket);
      if (!conn) {
        if (code === 'ECONNRESET' || code === 'EPIPE') routes.socketFailed('handshake');
        return socket.destroy();
      }
      // A refusal is under way: the socket was ended with it, and what follows is dropped (a failed parser may report each later read here).
      // The one case where this listener returns with the socket open is a refusal behind answers still being written (a held wait, a big
      // body): it is ended once they are, so that those answers come before the 400; meanwhile what the client sends is dropped, within LINGER_BYTES.
      if (conn.lingered()) return;
      if (!socket.writable || code === 'ECONNRESET' || code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADER_TIMEOUT') return socket.destroy();
      let kind = REFUSALS[code] ?? 'badRequest';
      // Node 22 and later refuse a head of over 1,000 lines as too large: the read it failed in shows which.
      if (kind === 'headTooLarge' && tooManyLines((err as { rawPacket?: Buffer }).rawPacket)) kind = 'headLines';
      conn.refuse(closingAnswer(this.routes.refused(kind)));
    });
  }

  /** Answers what arrived on `socket` with the refusal `kind` once what came before it is answered, then closes. */
  private refuseOn(socket: Socket, kind: Refusal): void {
    const bytes = closingAnswer(this.routes.refused(kind));
    const conn = connectionOf(socket);
    if (conn) conn.refuse(bytes);
    else socket.end(bytes);
  }

  async listen(host: string, port: number, exclusive: boolean): Promise<ListenSocket | null> {
    const check = await checkReadStop();
    this.state.readStops = check.stops;
    noteLimits(check);
    const server = this.server;
    return new Promise((resolve) => {
      const failed = (): void => resolve(null);
      server.once('error', failed);
      server.listen({ host, port, reusePort: !exclusive && hasReusePort() }, () => {
        server.off('error', failed);
        const address = server.address();
        resolve({
          port: typeof address === 'object' && address ? address.port : port,
          close: () => server.close(),
        });
      });
    });
  }

  /**
   * The service's own timeouts, whether or not the server listens (Node
   * stops its checks while it does not: accepting paused for want of
   * descriptors, a drain, a renewal): a connection found with nothing in
   * progress is closed once it has been so for QUIET_MS since its last
   * request arrived (a slowloris head, an idle keep-alive, a silent client).
   */
  private sweep(): void {
    const now = performance.now();
    for (const conn of this.state.open) {
      if (conn.busy) {
        conn.quietFromMs = -1;
        continue;
      }
      if (conn.quietFromMs < 0) conn.quietFromMs = now;
      if (now - Math.max(conn.quietFromMs, conn.lastSeenMs) >= QUIET_MS) conn.socket.destroy();
    }
  }

  drain(): void {
    this.state.draining = true;
  }

  closeQuiet(quietMs: number): number {
    const before = performance.now() - quietMs;
    for (const conn of this.state.open) if (!conn.busy && conn.lastSeenMs <= before) conn.socket.destroy();
    return this.state.open.size;
  }

  close(): void {
    clearInterval(this.sweeper);
    this.server.close();
    this.server.closeAllConnections();
  }

  renew(tls: TlsPair): void {
    (this.server as HttpsServer).setSecureContext({ ...TLS_CONTEXT, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key) });
  }
}

/** An error on a TLS client's raw socket: the socket closed (the TLS socket over it reports its own errors). */
function handshakeFailed(this: Socket): void {
  this.destroy();
}

/** Says once what the check at start found missing (read-stop.ts), for the engine's limits. */
function noteLimits(check: ReadStopCheck): void {
  if (limitsNoted) return;
  limitsNoted = true;
  if (!check.stops) limitsFound.push(`reading a connection's requests cannot be stopped on Node ${process.versions.node}: a client that pipelines a request behind a held one is closed, as uWebSockets.js closes it`);
  if (!check.omitsConnection) limitsFound.push(`Node ${process.versions.node} adds its own Connection line to every answer: the node engine's heads have one line more than uWebSockets.js's`);
}

/** Node's own http and https modules: no native addon, every supported Node line, any C library. */
export function nodeEngine(): Engine {
  return {
    name: 'node',
    build: `node:http ${process.versions.node}`,
    native: null,
    refusesBadHeads: false,
    refusesExpectations: true,
    timesOut: true,
    sharesPorts: hasReusePort(),
    app: (routes, tls) => new NodeApp(routes, tls),
    limits: () => [...limitsFound],
  };
}
