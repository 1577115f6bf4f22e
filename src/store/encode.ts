/** ASCII writers over byte buffers: `(buf, pos, value) → new pos`, no allocation. */
import { sharedBuffer } from './arena.js';
import { READ_SLACK, type ByteStrings } from './columns.js';

export function writeUint(buf: Uint8Array, pos: number, v: number): number {
  if (v < 10) { buf[pos] = 48 + v; return pos + 1; }
  let digits = 1;
  for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++;
  let p = pos + digits;
  for (let t = v; p > pos; t = Math.floor(t / 10)) buf[--p] = 48 + (t % 10);
  return pos + digits;
}


export function writeIPv4(buf: Uint8Array, pos: number, ip: number): number {
  pos = writeUint(buf, pos, ip >>> 24);
  buf[pos++] = 46;
  pos = writeUint(buf, pos, (ip >>> 16) & 255);
  buf[pos++] = 46;
  pos = writeUint(buf, pos, (ip >>> 8) & 255);
  buf[pos++] = 46;
  return writeUint(buf, pos, ip & 255);
}



export function writeAscii(buf: Uint8Array, pos: number, s: string): number {
  for (let i = 0; i < s.length; i++) buf[pos++] = s.charCodeAt(i);
  return pos;
}

/**
 * UTF-8 bytes as a plain Uint8Array. Hot loops that copy bytes see only this
 * one array type (a Buffer is a subclass with another shape), so their
 * element accesses stay monomorphic.
 */
export function utf8(s: string): Uint8Array {
  const b = Buffer.from(s, 'utf8');
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/** A CSV field (RFC 4180): a text with a comma, a double quote, CR or LF quoted, its quotes doubled; any other as it is. */
export const csvField = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/** Packs strings into one ByteStrings block (UTF-8), READ_SLACK zero bytes after the last. */
export function packStrings(items: readonly string[]): ByteStrings {
  const encoded = items.map((s) => Buffer.from(s, 'utf8'));
  // Store columns: shared, like the rest of a store (store/arena.ts).
  const off = new Uint32Array(new SharedArrayBuffer((items.length + 1) * 4));
  for (let i = 0; i < encoded.length; i++) off[i + 1] = off[i] + encoded[i].length;
  const bytes = new Uint8Array(sharedBuffer(off[items.length] + READ_SLACK), 0, off[items.length] + READ_SLACK);
  for (let i = 0; i < encoded.length; i++) bytes.set(encoded[i], off[i]);
  return { bytes, off };
}
