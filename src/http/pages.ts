import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { MIN_ENCODED_BYTES, type Encoding } from '../bodies/encoding.js';
import type { Logger } from '../core/log.js';
import { ifNoneMatch } from './conditional.js';
import { Codings } from './encoding.js';
import type { Exchange } from './exchange.js';
import type { Headers, Sender } from './sender.js';

/** The pages' own files (web/), and those of the API reference's renderer, from its npm package. */
const WEB = fileURLToPath(new URL('../../../web/', import.meta.url));
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** Path → file and type: nothing else is served, so no request can name a file. */
const FILES: ReadonlyArray<[path: string, file: string, type: string]> = [
  ['/', join(WEB, 'index.html'), HTML],
  ['/docs', join(WEB, 'docs.html'), HTML],
  ['/assets/builder.js', join(WEB, 'builder.js'), JS],
  ['/assets/docs.js', join(WEB, 'docs.js'), JS],
  ['/assets/style.css', join(WEB, 'style.css'), CSS],
  ['/assets/swagger-ui-bundle.js', join(SWAGGER_UI, 'swagger-ui-bundle.js'), JS],
  ['/assets/swagger-ui.css', join(SWAGGER_UI, 'swagger-ui.css'), CSS],
];

interface Page {
  bytes: Buffer;
  etag: string;
  headers: Record<'identity' | Encoding, Headers>;
  /** The encoded bytes, once compressed. */
  encoded: Partial<Record<Encoding, Buffer>>;
}

/**
 * The pages for people (README, Pages): read once at start, served from
 * memory with an ETag and Cache-Control: no-cache (a browser asks again,
 * and gets a 304). Each is compressed once in brotli and gzip on the
 * thread pool, at start: until then, it goes out as it is, so a page never
 * waits for a compression, and nothing of it runs on the event loop.
 */
export class Pages {
  readonly paths: readonly string[] = FILES.map(([path]) => path);
  private readonly pages = new Map<string, Page>();
  private readonly codings = new Codings();

  constructor(log: Logger) {
    for (const [path, file, type] of FILES) {
      const bytes = readFileSync(file);
      const etag = `W/"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
      const fixed: Array<[string, string]> = [['Content-Type', type], ['Cache-Control', 'no-cache'], ['ETag', etag], ['Vary', 'Accept-Encoding'], ['X-Content-Type-Options', 'nosniff']];
      const page: Page = { bytes, etag, encoded: {}, headers: { identity: fixed, br: [...fixed, ['Content-Encoding', 'br']], gzip: [...fixed, ['Content-Encoding', 'gzip']] } };
      this.pages.set(path, page);
      if (bytes.length < MIN_ENCODED_BYTES) continue;
      // Compressed hard once: these bytes are sent again and again.
      brotliCompress(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }, (err, out) => {
        if (err) log.error({ event: 'compression_failed', err }, `compressing ${path} failed; it is sent as it is`);
        else page.encoded.br = out;
      });
      gzip(bytes, { level: 9 }, (err, out) => {
        if (err) log.error({ event: 'compression_failed', err }, `compressing ${path} failed; it is sent as it is`);
        else page.encoded.gzip = out;
      });
    }
  }

  /** Answers GET or HEAD of `path`, one of `paths`. */
  answer(ex: Exchange, sender: Sender, path: string, acceptEncoding: string, ifNoneMatchHeader: string): void {
    const page = this.pages.get(path)!;
    if (ifNoneMatchHeader !== '' && ifNoneMatch(ifNoneMatchHeader, page.etag)) return sender.notModified(ex, page.headers.identity);
    const coding = this.codings.negotiate(acceptEncoding);
    const encoded = coding ? page.encoded[coding] : undefined;
    if (coding && encoded) return sender.bytes(ex, '200 OK', page.headers[coding], encoded);
    sender.bytes(ex, '200 OK', page.headers.identity, page.bytes);
  }

  /** Bytes of each page on the wire, plain and in each coding (for the docs and the closing figures). */
  sizes(): Record<string, { plain: number; br?: number; gzip?: number }> {
    return Object.fromEntries([...this.pages].map(([path, p]) => [path, { plain: p.bytes.length, br: p.encoded.br?.length, gzip: p.encoded.gzip?.length }]));
  }
}
