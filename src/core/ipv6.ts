import { parseIPv4Bytes } from './vocabulary.js';

/**
 * IPv6 text: RFC 4291's forms in, RFC 5952's canonical form out
 * (docs/api.md, IPv6). No brackets, zone or port: those are the caller's.
 */

/** The longest text of an IPv6 address: every group in full and a dotted tail. */
export const MAX_IPV6_TEXT = 45;

/** A hex digit's value, or -1. */
function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * Reads an IPv6 address in any RFC 4291 text form (`::`, a dotted IPv4
 * tail, any case) from b[start .. start + len) into the 8 groups of `out`;
 * false when the bytes are not one. No allocation: the snapshot's decoder
 * calls it for every IPv6 address it meets.
 */
export function parseIPv6Bytes(b: Uint8Array, start: number, len: number, out: Uint16Array): boolean {
  const end = start + len;
  if (len < 2 || len > MAX_IPV6_TEXT) return false;
  let n = 0;
  /** Where `::` stands among the groups, or -1. */
  let gap = -1;
  let i = start;
  if (b[i] === 58) {
    if (b[i + 1] !== 58) return false;
    gap = 0;
    i += 2;
  }
  while (i < end) {
    let value = 0;
    let j = i;
    for (let h = hexValue(b[j]); j < end && h >= 0; h = hexValue(b[++j])) value = value * 16 + h;
    if (j < end && b[j] === 46) {
      // The dotted IPv4 tail ends the address.
      const v4 = n > 6 ? -1 : parseIPv4Bytes(b, i, end - i);
      if (v4 < 0) return false;
      out[n++] = v4 >>> 16;
      out[n++] = v4 & 0xffff;
      break;
    }
    if (j === i || j - i > 4 || n === 8) return false;
    out[n++] = value;
    i = j;
    if (i === end) break;
    if (b[i] !== 58 || ++i === end) return false;
    if (b[i] === 58) {
      if (gap >= 0) return false;
      gap = n;
      i++;
    }
  }
  if (gap < 0) return n === 8;
  // `::` stands for one zero group at least.
  if (n > 7) return false;
  const tail = n - gap;
  for (let k = 1; k <= tail; k++) out[8 - k] = out[n - k];
  out.fill(0, gap, 8 - tail);
  return true;
}

const textScratch = new Uint8Array(MAX_IPV6_TEXT);
const groupScratch = new Uint16Array(8);

/** The 8 16-bit groups of an IPv6 address in any RFC 4291 text form, or null. */
export function parseIPv6(s: string): number[] | null {
  if (s.length > MAX_IPV6_TEXT) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127) return null;
    textScratch[i] = c;
  }
  return parseIPv6Bytes(textScratch, 0, s.length, groupScratch) ? Array.from(groupScratch) : null;
}

/** The IPv4 address (as a number) an IPv4-mapped address (`::ffff:a.b.c.d`) stands for, or -1. */
export function mappedIPv4(groups: ArrayLike<number>): number {
  for (let i = 0; i < 5; i++) if (groups[i] !== 0) return -1;
  return groups[5] === 0xffff ? groups[6] * 65536 + groups[7] : -1;
}

/** RFC 5952: lower case, no leading zeros, the first longest run of two or more zero groups as `::`. */
export function formatIPv6(groups: ArrayLike<number>): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string => {
    let text = '';
    for (let k = from; k < to; k++) text += (k > from ? ':' : '') + groups[k].toString(16);
    return text;
  };
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLength, 8)}`;
}

