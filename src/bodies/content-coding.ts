import { constants, createBrotliCompress, createGzip, type BrotliCompress, type Gzip } from 'node:zlib';

export type Encoding = 'br' | 'gzip';

/** Bodies shorter than this are sent as they are (docs/api.md, Compressed bodies). */
export const MIN_ENCODED_BYTES = 1024;

/**
 * Compression settings, chosen from the figures of `npm run bench --
 * compression` (bench/README.md) on the JSON dumps: gzip level 3
 * (level 4 is slower and no smaller), and brotli quality 4, the first
 * clearly smaller than gzip's choice (quality 5 is much slower).
 */
export const GZIP_LEVEL = 3;
export const BROTLI_QUALITY = 4;

/** A compressing stream on libuv's thread pool. */
export function compressor(encoding: Encoding): Gzip | BrotliCompress {
  return encoding === 'gzip'
    ? createGzip({ level: GZIP_LEVEL })
    : createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } });
}
