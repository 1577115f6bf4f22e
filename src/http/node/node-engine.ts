import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { MAX_HEAD_BYTES, MAX_HEADER_LINES, type App, type Engine, type ListenSocket, type Refusal, type Route, type Routes, type Serve } from '../engine.js';
import { TLS12_CIPHERS, type TlsPair } from '../tls-pair.js';
import type { Head } from '../head.js';
import { connectionOf, NodeConnection, type ConnectionsState } from './node-connection.js';
import { httpDate, NodeExchange } from './node-exchange.js';
import { NodeRequest } from './node-request.js';

/**
 * What Node's http server takes of clients (docs/operations.md, Where it
 * runs): request heads up to the 64 KiB uWebSockets.js is given; a head
 * must be whole within 10 s (slowloris), a request within 30 s, a TLS
 * handshake within 10 s; a connection idle between requests is closed
 * after 10 s, as uWebSockets.js closes one, and so is one that sends no
 * request at all (node-connection.ts). The timeouts are checked each
 * second, whether or not accepting is paused.
 */
const SERVER_OPTIONS = {
  maxHeaderSize: MAX_HEAD_BYTES,
  // The service answers it, as the catalogue words it (below).
  requireHostHeader: false,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 10_000,
  connectionsCheckingInterval: 1000,
  noDelay: true,
} as const;
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

class NodeApp implements App {
  private readonly server: Server | HttpsServer;
  private readonly state: ConnectionsState;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly routes: Routes, tls: TlsPair | null) {
    this.state = { draining: false, open: new Set(), lingered: (end) => routes.lingered(end) };
    const secure = tls !== null;
    const server = (this.server = tls ? createHttpsServer({ ...SERVER_OPTIONS, ...TLS_OPTIONS, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key) }) : createHttpServer(SERVER_OPTIONS));
    // Node's own switch (no option sets it): a client that half-closes after its request still gets its answer, then the connection closes.
    (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
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
      res.sendDate = false;
      // HTTP/1.1 keeps the connection without saying so, as uWebSockets.js; HTTP/1.0 gets Node's own Connection line.
      if (req.httpVersionMinor === 1) res.removeHeader('Connection');
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
    server.on('request', (req: IncomingMessage, res: ServerResponse) => connectionOf(req.socket)!.arrive(req, res));
    // Expect with anything but 100-continue (RFC 9110 10.1.1): 417, then a close; Node would answer it without a body.
    server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => refuse('expectation', req, res, connectionOf(req.socket)!));
    // CONNECT: no tunnel here. Node hands the socket over without a response to write to.
    server.on('connect', (_req: IncomingMessage, socket: Socket) => this.refuseOn(socket, 'method'));
    // A request the parser refused gets the service's answer once those before it have theirs, then the connection closes.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      const code = err.code ?? '';
      // No connection yet: a TLS handshake that failed or timed out (https hands its errors here), with nothing to answer in.
      const conn = connectionOf(socket);
      if (conn?.lingered()) return;
      if (!conn || !socket.writable || code === 'ECONNRESET' || code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADER_TIMEOUT') return socket.destroy();
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

  listen(host: string, port: number, exclusive: boolean): Promise<ListenSocket | null> {
    const server = this.server;
    return new Promise((resolve) => {
      const failed = (): void => resolve(null);
      server.once('error', failed);
      server.listen({ host, port, reusePort: !exclusive && hasReusePort() }, () => {
        server.off('error', failed);
        const address = server.address();
        resolve({
          port: typeof address === 'object' && address ? address.port : port,
          close: () => {
            server.close();
            this.keepTimeouts();
          },
        });
      });
    });
  }

  /**
   * A server that stops listening (accepting paused for want of
   * descriptors, or a drain) stops Node's check of the head and request
   * timeouts with it: until it listens again, a connection quiet for the
   * head timeout with no request in progress (a slowloris head, an idle
   * keep-alive) is closed here, each second.
   */
  private keepTimeouts(): void {
    if (this.sweeper !== null) return;
    this.sweeper = setInterval(() => this.closeQuiet(SERVER_OPTIONS.headersTimeout), SERVER_OPTIONS.connectionsCheckingInterval).unref();
    this.server.once('listening', () => {
      if (this.sweeper !== null) clearInterval(this.sweeper);
      this.sweeper = null;
    });
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
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
    this.server.close();
    this.server.closeAllConnections();
  }

  renew(tls: TlsPair): void {
    (this.server as HttpsServer).setSecureContext({ ...TLS_CONTEXT, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key) });
  }
}

/** Node's own http and https modules: no native addon, every supported Node line, any C library. */
export function nodeEngine(): Engine {
  return {
    name: 'node',
    build: `node:http ${process.versions.node}`,
    refusesBadHeads: false,
    refusesExpectations: true,
    timesOut: true,
    sharesPorts: hasReusePort(),
    app: (routes, tls) => new NodeApp(routes, tls),
  };
}
