import type { Exchange, RouteAccount } from './exchange.js';
import type { Head } from './head.js';
import type { TlsPair } from './tls-pair.js';

/**
 * What the service needs of an HTTP server (docs/operations.md, Where it
 * runs): routes, the request's method, target, headers and peer, and an
 * Exchange per request that writes the answer with backpressure. Two
 * engines implement it: uWebSockets.js (http/uws/) and Node's own http and
 * https modules (http/node/). Nothing above this file knows which runs.
 */
export interface Engine {
  readonly name: EngineName;
  /** The build or runtime that serves: `uWebSockets.js v20.30.0`, `node:http 22.23.3`. */
  readonly build: string;
  /** The native addon loaded (uWebSockets.js), or null: Node's own modules. */
  readonly native: NativeBuild | null;
  /** The engine answers 400 itself to two Host lines (the service must count them otherwise). */
  readonly refusesBadHeads: boolean;
  /** The engine closes connections that are idle or slow (docs/operations.md, What each build answers). */
  readonly timesOut: boolean;
  /** The engine answers an Expect other than 100-continue itself (through `Routes.refused`): the service need not look. */
  readonly refusesExpectations: boolean;
  /** Several threads of one process can listen on one port. */
  readonly sharesPorts: boolean;
  /** An app that serves `routes`: plain HTTP, or HTTPS with a certificate pair. */
  app(routes: Routes, tls: TlsPair | null): App;
  /** What the engine found it cannot do here, and does instead, each a sentence for the log: known once an app listens. */
  limits(): string[];
}

export type EngineName = 'uws' | 'node';

/** A native addon the service loaded, as an operator checks it (docs/operations.md, What installs and what loads): its package as installed, under its own name, and the SHA-256 of the `.node` file. */
export interface NativeBuild {
  readonly package: string;
  readonly version: string;
  readonly sha256: string;
}
export const ENGINE_CHOICES = ['auto', 'uws', 'node'] as const;
export type EngineChoice = (typeof ENGINE_CHOICES)[number];

/**
 * One request, valid only while its handler runs: what is needed later is
 * read before it returns. uWebSockets.js's own request object is one.
 */
export interface Request {
  /** A header's value (the first line of that name), '' when absent; the name made by `headerName`. */
  getHeader(name: ArrayBuffer): string;
  /** Every header line, names in lower case, in order. */
  forEach(cb: (name: string, value: string) => void): void;
  /** The method in lower case. */
  getMethod(): string;
  getCaseSensitiveMethod(): string;
  /** The target's path, raw (percent-encoding kept); bytes that are not UTF-8 read as U+FFFD. */
  getUrl(): string;
  /** The target's query after `?`, raw; undefined without `?`. */
  getQuery(): string | undefined;
}

/** Answers one request, with its Exchange made by the engine. */
export type Serve = (ex: Exchange, req: Request) => void;

/** A path and what answers it: GET, HEAD (the same handler, no body) and any other method. */
export interface Route {
  readonly path: string;
  readonly account: RouteAccount;
  readonly get: Serve;
  readonly head: Serve;
  readonly other: Serve;
}

export interface Routes {
  readonly paths: readonly Route[];
  /** Every other path. */
  readonly other: Route;
  /**
   * A request the engine's parser refused before any route saw it, where
   * the engine lets the service answer (node): its answer, which closes the
   * connection. `kind` says why.
   */
  refused(kind: Refusal): { head: Head; body: Uint8Array };
  /** A connection closed after a refusal, once what the client still sent was read and dropped (a lingering close): how it ended. */
  lingered(end: LingerEnd): void;
  /** An error on a client's socket closed its connection: what the connection was doing. */
  socketFailed(phase: SocketPhase): void;
}

/**
 * What a connection was doing when its socket failed: reading a head (or
 * idle between requests), writing an answer, holding a request, lingering
 * after a refusal, handed over by the HTTP parser (CONNECT), or in its TLS
 * handshake.
 */
export type SocketPhase = 'head' | 'answer' | 'held' | 'linger' | 'tunnel' | 'handshake';
export const SOCKET_PHASES: readonly SocketPhase[] = ['head', 'answer', 'held', 'linger', 'tunnel', 'handshake'];

/** How a lingering close ended: the client closed, or the time or the bytes allowed ran out. */
export type LingerEnd = 'client' | 'time' | 'bytes';

/**
 * Why an engine refused a request: its head was over 64 KiB or had over
 * 1,000 header lines, its framing is invalid, its target has bytes outside
 * ASCII, it has no Host, it is not HTTP/1.x, it expects what the service
 * does not do (Expect), or its method is CONNECT.
 */
export type Refusal = 'headTooLarge' | 'headLines' | 'badFraming' | 'badTarget' | 'badHost' | 'badRequest' | 'expectation' | 'method';

/** The largest request head taken (docs/api.md, Errors): request line and headers. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** The most header lines a request head may have. */
export const MAX_HEADER_LINES = 1000;

/** A listening socket; closing it stops accepting, connections stay. */
export interface ListenSocket {
  readonly port: number;
  close(): void;
}

/** The routes served on a port, plain or over TLS. */
export interface App {
  /**
   * Listens on `port` (0: any free one). `exclusive`: no other socket may
   * share the port; otherwise it is bound with SO_REUSEPORT, beside this
   * process's other apps (a renewal's, other threads'). Null when the port
   * cannot be had.
   */
  listen(host: string, port: number, exclusive: boolean): Promise<ListenSocket | null>;
  /** Closes every connection the app accepted. */
  close(): void;
  /** From now on every answer closes its connection, and says so (`Connection: close`): the service drains. */
  drain(): void;
  /**
   * Closes the connections that have no request in progress and have been
   * quiet for `quietMs` (accepted, or their last request arrived, before
   * that); returns how many are still open, or null where the engine
   * cannot tell.
   */
  closeQuiet(quietMs: number): number | null;
  /**
   * Puts a renewed certificate in force for new connections, where the
   * engine can do it in place; absent where a renewal needs a new app.
   */
  renew?(tls: TlsPair): void;
}

/** Names of request headers for `getHeader`, encoded once: uWebSockets.js reads bytes where they are, and converts a string on every call. */
const names = new Map<ArrayBuffer, string>();
export function headerName(name: string): ArrayBuffer {
  const bytes = new TextEncoder().encode(name).buffer as ArrayBuffer;
  names.set(bytes, name);
  return bytes;
}
/** The text of a name made by `headerName`. */
export const headerText = (name: ArrayBuffer): string => names.get(name)!;

/** The request headers the service reads. */
export const ACCEPT_ENCODING = headerName('accept-encoding');
export const IF_NONE_MATCH = headerName('if-none-match');
export const CONTENT_LENGTH = headerName('content-length');
export const HOST = headerName('host');
export const EXPECT = headerName('expect');
