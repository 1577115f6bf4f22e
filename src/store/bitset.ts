/**
 * Bitsets over row ids: bit `r & 31` of word `r >>> 5`.
 * Invariant: bits at or beyond the row count are zero, so whole words can be
 * read without masking, except where a caller cuts a range shorter.
 */
export const wordsFor = (bits: number): number => (bits + 31) >>> 5;

export function setBit(words: Uint32Array, r: number): void {
  words[r >>> 5] |= 1 << (r & 31);
}

/**
 * A family of `count` bitsets of `words` words each, in one buffer so that it
 * transfers between threads as one piece. Set i is words [i*words, (i+1)*words).
 */
export interface BitsetFamily {
  words: number;
  data: Uint32Array;
}

export function member(family: BitsetFamily, i: number): Uint32Array {
  return family.data.subarray(i * family.words, (i + 1) * family.words);
}
