import { createHash } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';

export interface ReadResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as it came on the wire (an encoded one stays encoded). */
  body: Buffer;
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
}

function read<T>(port: number, path: string, o: ReadOptions, finish: (status: number, headers: IncomingHttpHeaders, chunks: Buffer[], bytes: number) => T, keep: boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    // node:http on a connection of its own: it leaves an encoded body as it came.
    const req = request({ host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
        if (keep) chunks.push(d);
        if (o.onChunk && !o.onChunk(d, bytes)) {
          req.destroy();
          resolve(finish(res.statusCode ?? 0, res.headers, chunks, bytes));
        }
      });
      res.on('end', () => resolve(finish(res.statusCode ?? 0, res.headers, chunks, bytes)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** One request on a fresh connection, with exactly the headers given; the body as it came. */
export const readRaw = (port: number, path: string, o: ReadOptions = {}): Promise<ReadResponse> =>
  read(port, path, o, (status, headers, chunks) => ({ status, headers, body: Buffer.concat(chunks) }), true);

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
