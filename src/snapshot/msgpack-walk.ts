import { unpackMultiple } from 'msgpackr';

/**
 * Walks MessagePack bytes without decoding them: container headers, and the
 * extent of a value to step over. msgpackr decodes only the small top-level
 * values; the records are read by the record decoder.
 */

export class Truncated extends Error {
  constructor() {
    super('unexpected end of data');
  }
}

/** [entries, header bytes] of a map at pos, or null if the value there is not a map. */
export function mapHeader(b: Uint8Array, pos: number): [number, number] | null {
  return containerHeader(b, pos, 0x80, 0xde);
}

/** [items, header bytes] of an array at pos, or null if the value there is not an array. */
export function arrayHeader(b: Uint8Array, pos: number): [number, number] | null {
  return containerHeader(b, pos, 0x90, 0xdc);
}

function containerHeader(b: Uint8Array, pos: number, fix: number, wide16: number): [number, number] | null {
  need(b, pos, 1);
  const t = b[pos];
  if ((t & 0xf0) === fix) return [t & 0x0f, 1];
  if (t === wide16) return [u(b, pos + 1, 2), 3];
  if (t === wide16 + 1) return [u(b, pos + 1, 4), 5];
  return null;
}

function need(b: Uint8Array, pos: number, bytes: number): void {
  if (pos + bytes > b.length) throw new Truncated();
}

/** Big-endian unsigned integer of 1, 2 or 4 bytes. */
function u(b: Uint8Array, pos: number, bytes: number): number {
  need(b, pos, bytes);
  let v = 0;
  for (let i = 0; i < bytes; i++) v = v * 256 + b[pos + i];
  return v;
}

/**
 * The position just past the value at pos. Iterative, with a count of values
 * still to skip, so deeply nested input cannot overflow the stack.
 */
export function skipValue(b: Uint8Array, pos: number): number {
  let pending = 1;
  while (pending > 0) {
    pending--;
    need(b, pos, 1);
    const t = b[pos];
    if (t <= 0x7f || t >= 0xe0) pos += 1; // fixints
    else if (t <= 0x8f) { pending += 2 * (t & 0x0f); pos += 1; }
    else if (t <= 0x9f) { pending += t & 0x0f; pos += 1; }
    else if (t <= 0xbf) pos += 1 + (t & 0x1f); // fixstr
    else switch (t) {
      case 0xc0: case 0xc2: case 0xc3: pos += 1; break;
      case 0xc4: case 0xd9: pos += 2 + u(b, pos + 1, 1); break;
      case 0xc5: case 0xda: pos += 3 + u(b, pos + 1, 2); break;
      case 0xc6: case 0xdb: pos += 5 + u(b, pos + 1, 4); break;
      case 0xc7: pos += 3 + u(b, pos + 1, 1); break;
      case 0xc8: pos += 4 + u(b, pos + 1, 2); break;
      case 0xc9: pos += 6 + u(b, pos + 1, 4); break;
      case 0xca: case 0xce: case 0xd2: pos += 5; break;
      case 0xcb: case 0xcf: case 0xd3: pos += 9; break;
      case 0xcc: case 0xd0: pos += 2; break;
      case 0xcd: case 0xd1: pos += 3; break;
      case 0xd4: pos += 3; break;
      case 0xd5: pos += 4; break;
      case 0xd6: pos += 6; break;
      case 0xd7: pos += 10; break;
      case 0xd8: pos += 18; break;
      case 0xdc: pending += u(b, pos + 1, 2); pos += 3; break;
      case 0xdd: pending += u(b, pos + 1, 4); pos += 5; break;
      case 0xde: pending += 2 * u(b, pos + 1, 2); pos += 3; break;
      case 0xdf: pending += 2 * u(b, pos + 1, 4); pos += 5; break;
      default: throw new Error(`invalid MessagePack type byte 0x${t.toString(16)} at ${pos}`);
    }
  }
  if (pos > b.length) throw new Truncated();
  return pos;
}

/** The one value at pos, decoded by msgpackr, and the position after it. */
export function decodeOne(b: Uint8Array, pos: number): { value: unknown; end: number } {
  let value: unknown;
  let end = -1;
  try {
    // unpackMultiple reads values in sequence and reports where each ends; stop after the first.
    unpackMultiple(b.subarray(pos), (v: unknown, _start?: number, stop?: number) => {
      value = v;
      end = pos + stop!;
      return false;
    });
  } catch (err) {
    // A value cut by the end of the bytes at hand: the caller may read on.
    if ((err as { incomplete?: boolean }).incomplete === true) throw new Truncated();
    throw err;
  }
  if (end < 0) throw new Truncated();
  return { value, end };
}
