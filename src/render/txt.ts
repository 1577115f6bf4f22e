import { TYPES } from '../snapshot/format.js';
import type { Store } from '../store/store.js';
import { utf8 } from '../store/encode.js';
import { copyBytes, type OutputBuffer } from './output-buffer.js';

const PREFIX = TYPES.map((t) => utf8(`${t}://`));
const MAX_PREFIX = Math.max(...PREFIX.map((p) => p.length));

/**
 * One `ip:port\n` (or `type://ip:port\n`) per row. The store keeps the lines
 * contiguous in row order, so a run of consecutive rows is a single copy.
 */
export function renderTxt(out: OutputBuffer, store: Store, rows: Uint32Array, n: number, typePrefix: boolean): void {
  const { bytes, off } = store.c.lines;
  const type = store.c.type;
  if (typePrefix) {
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      const start = off[r];
      const end = off[r + 1];
      const buf = out.reserve(MAX_PREFIX + end - start);
      const prefix = PREFIX[type[r]];
      const pos = copyBytes(buf, out.pos, prefix, 0, prefix.length);
      out.pos = copyBytes(buf, pos, bytes, start, end);
    }
    return;
  }
  let i = 0;
  while (i < n) {
    let j = i + 1;
    while (j < n && rows[j] === rows[j - 1] + 1) j++;
    const start = off[rows[i]];
    const end = off[rows[j - 1] + 1];
    out.pos = copyBytes(out.reserve(end - start), out.pos, bytes, start, end);
    i = j;
  }
}
