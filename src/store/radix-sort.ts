/**
 * Stable LSD radix sort of an index permutation by precomputed 16-bit digits.
 * `digitPasses[0]` is the least significant digit; each digit array is indexed
 * by the original item index, not by position. Sorting 1M items over eight
 * passes takes tens of milliseconds and, being stable, makes multi-key orders
 * (and "later in the file wins" ties) exact without a comparator.
 */
export function radixSortIndices(order: Uint32Array, digitPasses: ReadonlyArray<Uint16Array>): Uint32Array {
  const n = order.length;
  let src: Uint32Array = order;
  let dst: Uint32Array = new Uint32Array(n);
  const counts = new Uint32Array(65537);
  for (const digits of digitPasses) {
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
  }
  return src;
}

/**
 * Digit arrays for a uint32 key, least significant first, optionally for a
 * descending order. Keys are taken relative to their minimum, so a key whose
 * values span less than 65,536 (checked_at within a day, ping in ms) needs one
 * pass instead of two.
 */
export function uint32Digits(get: (i: number) => number, n: number, descending: boolean): Uint16Array[] {
  const keys = new Uint32Array(n);
  let min = 0xffffffff;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = (keys[i] = descending ? 0xffffffff - get(i) : get(i));
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const lo = new Uint16Array(n);
  if (n === 0 || max - min < 65536) {
    for (let i = 0; i < n; i++) lo[i] = keys[i] - min;
    return [lo];
  }
  const hi = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    const v = keys[i] - min;
    lo[i] = v & 0xffff;
    hi[i] = v >>> 16;
  }
  return [lo, hi];
}
