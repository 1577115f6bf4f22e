import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { App, Engine, ListenSocket, Refusal, Route, Routes, Serve } from '../engine.js';
import { TLS12_CIPHERS, type TlsPair } from '../tls-pair.js';
import type { Head } from '../head.js';
import { httpDate, NodeExchange } from './node-exchange.js';
import { NodeRequest } from './node-request.js';

/**
 * What Node's http server takes of clients (docs/operations.md, Where it
 * runs): request heads up to the 64 KiB uWebSockets.js is given; a head
 * must be whole within 10 s (slowloris), a request within 30 s; a
 * connection idle between requests is closed after 10 s, as
 * uWebSockets.js closes one. The timeouts are checked each second.
 */
const SERVER_OPTIONS = {
  maxHeaderSize: 64 * 1024,
  // The service answers it, as the catalogue words it (below).
  requireHostHeader: false,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 10_000,
  connectionsCheckingInterval: 1000,
  noDelay: true,
} as const;

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

/** An absolute-form target's scheme and authority (RFC 9112 3.2.2): served as the path it names. */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/** The bytes of an answer written straight to the socket: its head, Connection: close, Date and the length, as uWebSockets.js orders them. */
function closingAnswer(h: Head, body: Uint8Array): Buffer {
  let text = `HTTP/1.1 ${h.status}\r\n`;
  for (let i = 0; i < h.lines.length; i += 2) text += `${h.lines[i]}: ${h.lines[i + 1]}\r\n`;
  text += `Connection: close\r\nDate: ${httpDate()}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(text, 'latin1'), body]);
}

class NodeApp implements App {
  private readonly server: Server | HttpsServer;

  constructor(routes: Routes, tls: TlsPair | null) {
    const secure = tls !== null;
    this.server = tls
      ? createHttpsServer({ ...SERVER_OPTIONS, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key), ciphers: TLS12_CIPHERS, minVersion: 'TLSv1.2' })
      : createHttpServer(SERVER_OPTIONS);
    const table = new Map<string, Route>(routes.paths.map((r) => [r.path, r]));
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.sendDate = false;
      // HTTP/1.1 keeps the connection without saying so, as uWebSockets.js; HTTP/1.0 gets Node's own Connection line.
      if (req.httpVersionMinor === 1) res.removeHeader('Connection');
      // RFC 9112 3.2: an HTTP/1.1 request without Host is refused, and the connection closed.
      if (req.httpVersionMinor === 1 && !hasHost(req.rawHeaders)) {
        const answer = routes.refused('badHost');
        const ex = new NodeExchange(req, res, false, secure, routes.other.account);
        ex.writeHead(answer.head);
        return ex.endAndClose(answer.body);
      }
      let target = req.url!;
      if (target.charCodeAt(0) !== 47 /* / */) target = target.replace(ABSOLUTE_FORM, '') || '/';
      const q = target.indexOf('?');
      const r = table.get(q < 0 ? target : target.slice(0, q)) ?? routes.other;
      const method = req.method;
      const head = method === 'HEAD';
      const serve: Serve = method === 'GET' ? r.get : head ? r.head : r.other;
      serve(new NodeExchange(req, res, head, secure, r.account), new NodeRequest(req, target, q));
    });
    // A request the parser refused gets the service's answer, then the connection closes.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) return socket.destroy();
      const code = err.code ?? '';
      if (code === 'ECONNRESET' || code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADER_TIMEOUT') return socket.destroy();
      const answer = routes.refused(REFUSALS[code] ?? 'badRequest');
      socket.end(closingAnswer(answer.head, answer.body));
    });
  }

  listen(host: string, port: number, exclusive: boolean): Promise<ListenSocket | null> {
    const server = this.server;
    return new Promise((resolve) => {
      const failed = (): void => resolve(null);
      server.once('error', failed);
      server.listen({ host, port, reusePort: !exclusive && hasReusePort() }, () => {
        server.off('error', failed);
        const address = server.address();
        resolve({ port: typeof address === 'object' && address ? address.port : port, close: () => server.close() });
      });
    });
  }

  close(): void {
    this.server.close();
    this.server.closeAllConnections();
  }

  renew(tls: TlsPair): void {
    (this.server as HttpsServer).setSecureContext({ cert: Buffer.from(tls.cert), key: Buffer.from(tls.key), ciphers: TLS12_CIPHERS, minVersion: 'TLSv1.2' });
  }
}

/** Node's own http and https modules: no native addon, every supported Node line, any C library. */
export function nodeEngine(): Engine {
  return {
    name: 'node',
    build: `node:http ${process.versions.node}`,
    refusesBadHeads: false,
    sharesPorts: hasReusePort(),
    app: (routes, tls) => new NodeApp(routes, tls),
  };
}
