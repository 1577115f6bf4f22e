import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { MIN_ENCODED_BYTES, type Encoding } from '../bodies/content-coding.js';
import type { Logger } from '../core/log.js';
import { ifNoneMatch } from './conditional.js';
import { Codings } from './accept-encoding.js';
import type { Exchange } from './exchange.js';
import { head, type Head } from './head.js';
import type { Sender } from './sender.js';

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

/**
 * What the pages let a browser do (docs/pages.md): everything from this
 * origin and nothing from another, no inline script (Swagger UI sets
 * styles from its script, and its stylesheet's icons are data: URLs), no
 * framing by any page, no Referer to anywhere.
 */
const PROTECTION: ReadonlyArray<[string, string]> = [
  ['Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
];

interface Page {
  path: string;
  bytes: Buffer;
  etag: string;
  /** The heads of a 200 in each coding, and of a 304. */
  heads: Record<'identity' | Encoding | 'notModified', Head>;
  /** The encoded bytes once compressed, or `pending` while they are. */
  encoded: Partial<Record<Encoding, Buffer | 'pending'>>;
}

/** Brotli quality 6: within 2% of quality 9's size on the reference's bundle, in a third of its time (quality 11 takes seconds). */
const BROTLI_QUALITY = 6;
const GZIP_LEVEL = 9;

/**
 * The pages for people (docs/pages.md): read once at start, served from
 * memory with an ETag and Cache-Control: no-cache (a browser asks again,
 * and gets a 304). A page is compressed in a coding the first time a
 * client accepts it, once, on the thread pool; meanwhile it goes out as it
 * is, so a page never waits for a compression, nothing of it runs on the
 * event loop, and an instance nobody browses never compresses anything.
 */
export class Pages {
  readonly paths: readonly string[] = FILES.map(([path]) => path);
  private readonly pages = new Map<string, Page>();
  private readonly codings = new Codings();

  constructor(private readonly log: Logger) {
    for (const [path, file, type] of FILES) {
      const bytes = readFileSync(file);
      const etag = `W/"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
      const fixed: Array<[string, string]> = [['Content-Type', type], ['Cache-Control', 'no-cache'], ['ETag', etag], ['Vary', 'Accept-Encoding'], ...PROTECTION];
      const heads = {
        identity: head('200 OK', fixed),
        br: head('200 OK', [...fixed, ['Content-Encoding', 'br']]),
        gzip: head('200 OK', [...fixed, ['Content-Encoding', 'gzip']]),
        notModified: head('304 Not Modified', fixed),
      };
      this.pages.set(path, { path, bytes, etag, encoded: {}, heads });
    }
  }

  /** Answers GET or HEAD of `path`, one of `paths`. */
  answer(ex: Exchange, sender: Sender, path: string, acceptEncoding: string, ifNoneMatchHeader: string): void {
    const page = this.pages.get(path)!;
    if (ifNoneMatchHeader !== '' && ifNoneMatch(ifNoneMatchHeader, page.etag)) return sender.notModified(ex, page.heads.notModified);
    const coding = page.bytes.length >= MIN_ENCODED_BYTES ? this.codings.negotiate(acceptEncoding) : null;
    const encoded = coding ? page.encoded[coding] : undefined;
    if (coding && encoded instanceof Buffer) return sender.bytes(ex, page.heads[coding], encoded);
    if (coding && encoded === undefined) this.compress(page, coding);
    sender.bytes(ex, page.heads.identity, page.bytes);
  }

  private compress(page: Page, coding: Encoding): void {
    page.encoded[coding] = 'pending';
    const done = (err: Error | null, out: Buffer): void => {
      if (!err) page.encoded[coding] = out;
      else this.log.error({ event: 'compression_failed', err }, `compressing ${page.path} failed; it is sent as it is`);
    };
    if (coding === 'br') brotliCompress(page.bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: page.bytes.length } }, done);
    else gzip(page.bytes, { level: GZIP_LEVEL }, done);
  }
}
