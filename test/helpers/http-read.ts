import { createHash } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { request as requestTls, type Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface ReadResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as it came on the wire (an encoded one stays encoded). */
  body: Buffer;
  /** Over HTTPS: the common name of the server's certificate, and whether the connection was one kept alive from before. */
  peer?: { cn: string; reused: boolean };
}

export interface DigestResponse {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
}

interface ReadOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Called with each chunk as it arrives; return false to walk away (the socket is destroyed). */
  onChunk?: (chunk: Buffer, received: number) => boolean;
  /**
   * HTTPS to localhost, trusting `ca`; on a connection of its own unless
   * `agent` keeps them alive; `version` pins the TLS version.
   */
  tls?: { ca: string | Buffer; agent?: Agent; version?: 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' };
}

function read<T>(port: number, path: string, o: ReadOptions, finish: (status: number, headers: IncomingHttpHeaders, chunks: Buffer[], bytes: number, peer?: ReadResponse['peer']) => T, keep: boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    // node:http on a connection of its own: it leaves an encoded body as it came.
    const common = { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers ?? {} };
    const t = o.tls;
    const req = (t
      ? requestTls({ ...common, servername: 'localhost', ca: t.ca, agent: t.agent ?? false, ...(t.version ? { minVersion: t.version, maxVersion: t.version } : {}) }, (res) => respond(res))
      : request({ ...common, agent: false }, (res) => respond(res)));
    const respond = (res: import('node:http').IncomingMessage): void => {
      const socket = res.socket as TLSSocket;
      const peer = t ? { cn: String(socket.getPeerCertificate().subject?.CN), reused: req.reusedSocket } : undefined;
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
        if (keep) chunks.push(d);
        if (o.onChunk && !o.onChunk(d, bytes)) {
          req.destroy();
          resolve(finish(res.statusCode ?? 0, res.headers, chunks, bytes, peer));
        }
      });
      res.on('end', () => resolve(finish(res.statusCode ?? 0, res.headers, chunks, bytes, peer)));
      res.on('error', reject);
    };
    req.on('error', reject);
    req.end();
  });
}

/** One request on a fresh connection, with exactly the headers given; the body as it came. */
export const readRaw = (port: number, path: string, o: ReadOptions = {}): Promise<ReadResponse> =>
  read(port, path, o, (status, headers, chunks, _bytes, peer) => ({ status, headers, body: Buffer.concat(chunks), ...(peer ? { peer } : {}) }), true);

/** The same for a large body, of which only its length and SHA-256 are kept. */
export function readDigest(port: number, path: string, o: ReadOptions = {}): Promise<DigestResponse> {
  const hash = createHash('sha256');
  const onChunk = o.onChunk;
  return read(port, path, { ...o, onChunk: (d, n) => (hash.update(d), onChunk ? onChunk(d, n) : true) }, (status, headers, _c, bytes) => ({ status, headers, bytes, sha256: hash.digest('hex') }), false);
}

export const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

/** A series' value in a /metrics exposition. */
export function metricValue(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  if (!line) throw new Error(`no ${series} in /metrics`);
  return Number(line.slice(series.length + 1));
}
