import { parseIPv4 } from './vocabulary.js';

/**
 * IPv6 text: RFC 4291's forms in, RFC 5952's canonical form out
 * (docs/api.md, IPv6). No brackets, zone or port: those are the caller's.
 */

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** The 8 16-bit groups of an IPv6 address in any RFC 4291 text form (`::`, a dotted IPv4 tail), or null. */
export function parseIPv6(s: string): number[] | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return null;
  const halves = s.split('::');
  if (halves.length > 2) return null;
  // The dotted IPv4 tail may only end the address.
  const part = (h: string, last: boolean): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    const pieces = h.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i];
      if (last && i === pieces.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (v4 < 0) return null;
        out.push(v4 >>> 16, v4 & 0xffff);
      } else if (HEX_GROUP.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = part(halves[0], halves.length === 1);
  const tail = halves.length === 2 ? part(halves[1], true) : [];
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...new Array<number>(missing).fill(0), ...tail] : null;
}

/** The IPv4 address (as a number) an IPv4-mapped address (`::ffff:a.b.c.d`) stands for, or -1. */
export function mappedIPv4(groups: readonly number[]): number {
  for (let i = 0; i < 5; i++) if (groups[i] !== 0) return -1;
  return groups[5] === 0xffff ? groups[6] * 65536 + groups[7] : -1;
}

/** RFC 5952: lower case, no leading zeros, the first longest run of two or more zero groups as `::`. */
export function formatIPv6(groups: readonly number[]): string {
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
  const hex = (from: number, to: number): string => groups.slice(from, to).map((g) => g.toString(16)).join(':');
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLength, 8)}`;
}
