import { TYPES } from '../core/vocabulary.js';
import type { ByteStrings } from '../store/columns.js';
import type { Store } from '../store/store.js';
import { packStrings } from '../store/encode.js';
import { copyWords, dataView, type OutputBuffer } from './output-buffer.js';

/** What comes before `ip:port` on a line, per type: nothing, the type (`type_prefix=1`), or a change set's upsert mark and type. */
export type LinePrefix = ByteStrings | null;
export const TYPE_PREFIX: LinePrefix = packStrings(TYPES.map((t) => `${t}://`));
export const UPSERT_PREFIX: LinePrefix = packStrings(TYPES.map((t) => `+${t}://`));
const MAX_PREFIX = Math.max(...TYPES.map((t) => t.length + 4));
/** Runs longer than this are copied with `set`, whose fixed cost then pays off. */
const LONG_RUN = 64;

/**
 * One `ip:port\n` (or `type://ip:port\n`) per row of `rows[from..to)`. The store keeps the lines
 * contiguous in row order, so a run of consecutive rows is a single copy.
 */
export function renderTxt(out: OutputBuffer, store: Store, rows: Uint32Array, from: number, to: number, prefix: LinePrefix): void {
  const { bytes, off } = store.c.lines;
  const lines = dataView(bytes);
  // One reservation for the worst case: no growth check per row.
  const buf = out.reserve((to - from) * txtRowBound(store, prefix));
  const dv = dataView(buf);
  let pos = out.pos;
  if (prefix) {
    const type = store.c.type;
    const prefixes = dataView(prefix.bytes);
    for (let i = from; i < to; i++) {
      const r = rows[i];
      const t = type[r];
      pos = copyWords(dv, pos, prefixes, prefix.off[t], prefix.off[t + 1]);
      pos = copyWords(dv, pos, lines, off[r], off[r + 1]);
    }
  } else {
    let i = from;
    while (i < to) {
      let j = i + 1;
      while (j < to && rows[j] === rows[j - 1] + 1) j++;
      const start = off[rows[i]];
      const end = off[rows[j - 1] + 1];
      if (end - start > LONG_RUN) {
        buf.set(bytes.subarray(start, end), pos);
        pos += end - start;
      } else pos = copyWords(dv, pos, lines, start, end);
      i = j;
    }
  }
  out.pos = pos;
}

/** An upper bound of the bytes one line of the store takes. */
export const txtRowBound = (store: Store, prefix: LinePrefix): number => store.meta.maxLineBytes + (prefix ? MAX_PREFIX : 0);

/** The bytes that `rows[from..to)` take in a txt body. */
export function txtLength(store: Store, rows: Uint32Array, from: number, to: number, prefix: LinePrefix): number {
  const off = store.c.lines.off;
  const type = store.c.type;
  let bytes = 0;
  for (let i = from; i < to; i++) {
    const r = rows[i];
    bytes += off[r + 1] - off[r];
    if (prefix) bytes += prefix.off[type[r] + 1] - prefix.off[type[r]];
  }
  return bytes;
}
