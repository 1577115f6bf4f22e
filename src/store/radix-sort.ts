/** A column of keys indexed by item, and the direction of its order. */
export interface SortKey {
  column: Uint8Array | Uint16Array | Uint32Array;
  descending: boolean;
}

/**
 * Stable LSD radix sort of the items in `order` by `keys`, the least
 * significant first, 16 bits a pass. A uint32 key is taken relative to its
 * minimum, so one whose values span less than 65,536 (a rank) takes one
 * pass, like a uint8 or uint16 key. Being stable, it makes multi-key orders
 * (and "later in the file wins" ties) exact without a comparator.
 *
 * Items are below `digits.length`, and every key column has that many
 * entries: the digits of a pass are computed for all of them in one
 * sequential sweep, which costs less than reaching them in sorted order.
 * `spare` (as long as `order`) and `digits` are working space the caller
 * owns; the result is `order` or `spare`, whichever the last pass wrote.
 */
export function radixSortIndices(order: Uint32Array, keys: readonly SortKey[], spare: Uint32Array, digits: Uint16Array): Uint32Array {
  const n = order.length;
  const items = digits.length;
  let src = order;
  let dst = spare.subarray(0, n);
  const counts = new Uint32Array(65537);
  const pass = (): void => {
    counts.fill(0);
    for (let j = 0; j < n; j++) counts[digits[src[j]] + 1]++;
    for (let d = 1; d < 65537; d++) counts[d] += counts[d - 1];
    for (let j = 0; j < n; j++) {
      const item = src[j];
      dst[counts[digits[item]]++] = item;
    }
    const t = src;
    src = dst;
    dst = t;
  };
  for (const { column, descending } of keys) {
    if (!(column instanceof Uint32Array)) {
      if (descending) for (let i = 0; i < items; i++) digits[i] = 0xffff - column[i];
      else digits.set(column.subarray(0, items));
      pass();
      continue;
    }
    let min = 0xffffffff;
    let max = 0;
    for (let i = 0; i < items; i++) {
      const v = descending ? 0xffffffff - column[i] : column[i];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    for (let shift = 0; shift === 0 || (shift === 16 && max - min >= 65536); shift += 16) {
      for (let i = 0; i < items; i++) digits[i] = (((descending ? 0xffffffff - column[i] : column[i]) - min) >>> shift) & 0xffff;
      pass();
    }
  }
  return src;
}
