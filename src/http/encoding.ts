import { constants, createBrotliCompress, createGzip, type BrotliCompress, type Gzip } from 'node:zlib';

export type Encoding = 'br' | 'gzip';

/** Bodies shorter than this are sent as they are (README, Compressed bodies). */
export const MIN_ENCODED_BYTES = 1024;

/**
 * Compression settings, chosen from the figures of `npm run
 * bench:compression` (bench/README.md) on the JSON dumps: gzip level 3
 * (level 4 is slower and no smaller), and brotli quality 4, the first
 * clearly smaller than gzip's choice (quality 5 is much slower).
 */
export const GZIP_LEVEL = 3;
export const BROTLI_QUALITY = 4;

/** A few header values cover nearly every client: each is parsed once. */
const MAX_REMEMBERED = 256;
const remembered = new Map<string, Encoding | null>();

/**
 * The encoding to answer with, from an Accept-Encoding value with its
 * q-values (RFC 9110 12.5.3): br or gzip, the one with the higher q, br when
 * equal; null for the body as it is. `*` stands for any coding not named.
 */
export function negotiate(header: string): Encoding | null {
  if (header === '') return null;
  let choice = remembered.get(header);
  if (choice !== undefined) return choice;
  choice = parse(header);
  if (remembered.size >= MAX_REMEMBERED) remembered.clear();
  remembered.set(header, choice);
  return choice;
}

function parse(header: string): Encoding | null {
  let br = -1;
  let gzip = -1;
  let star = -1;
  for (const item of header.split(',')) {
    const [name, ...params] = item.split(';');
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k.trim().toLowerCase() === 'q') {
        const n = Number(v?.trim());
        q = Number.isFinite(n) && n >= 0 && n <= 1 ? n : 0;
      }
    }
    const coding = name.trim().toLowerCase();
    if (coding === 'br') br = q;
    else if (coding === 'gzip' || coding === 'x-gzip') gzip = Math.max(gzip, q);
    else if (coding === '*') star = q;
  }
  if (br < 0) br = star;
  if (gzip < 0) gzip = star;
  if (br <= 0 && gzip <= 0) return null;
  return br >= gzip ? 'br' : 'gzip';
}

/** A compressing stream on libuv's thread pool. */
export function compressor(encoding: Encoding): Gzip | BrotliCompress {
  return encoding === 'gzip'
    ? createGzip({ level: GZIP_LEVEL })
    : createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } });
}
