import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CodedError } from '../core/errors.js';
import type { Slices } from '../core/slices.js';
import { KEYS_FILE_MAX_BYTES, KeysBuilder, MAX_KEYS, parseKeys, type KeysData, validKeyEntry } from './keys.js';

/** Bytes read, or entries parsed, at a time. */
const READ_BYTES = 1 << 18;
const BATCH_BYTES = 1 << 16;

/**
 * Reads a keys file on the keys thread (keys-worker.ts) in slices: the bytes
 * read a piece at a time, the entries of the `keys` array parsed and checked
 * a batch at a time and added to a KeysBuilder, so that no parse of the
 * whole file holds the thread's core, and no object per key outlives its
 * batch. A file that is not exactly `{"keys":[...]}` of valid entries is
 * read again the way parseKeys reads it, whose error names the place.
 */
export function readKeysFile(path: string, slices: Slices): KeysData {
  const bytes = readBytes(path, slices);
  return keysOf(bytes, slices) ?? parseKeys(bytes.toString('utf8'));
}

function readBytes(path: string, slices: Slices): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size > KEYS_FILE_MAX_BYTES) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${size} bytes, more than the ${KEYS_FILE_MAX_BYTES / 1024 / 1024} MB a keys file may have`);
    const bytes = Buffer.allocUnsafe(size);
    let at = 0;
    for (;;) {
      const read = readSync(fd, bytes, at, Math.min(READ_BYTES, size - at), null);
      if (read === 0) break;
      at += read;
      if (at === size) break;
      // A piece read is worth a clock reading: page faults and the copy take time.
      slices.tick(Number.POSITIVE_INFINITY);
    }
    return bytes.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const PREFIX = Buffer.from('"keys"');

/** What `bytes` hold, read a batch at a time; null when they are not a valid keys file of the usual shape. */
export function keysOf(bytes: Buffer, slices: Slices): KeysData | null {
  const skip = (i: number): number => {
    while (i < bytes.length && isSpace(bytes[i])) i++;
    return i;
  };
  let i = skip(0);
  if (bytes[i] !== 0x7b) return null;
  i = skip(i + 1);
  if (!bytes.subarray(i, i + PREFIX.length).equals(PREFIX)) return null;
  i = skip(i + PREFIX.length);
  if (bytes[i] !== 0x3a) return null;
  i = skip(i + 1);
  if (bytes[i] !== 0x5b) return null;
  const start = i + 1;

  // Where the batches end (commas of the array, then its end), and how many entries there are.
  const ends: number[] = [];
  let entries = 1;
  let from = start;
  let depth = 0;
  for (let j = from; j < bytes.length; j++) {
    if ((j & 0x3ff) === 0) slices.tick();
    const c = bytes[j];
    if (c === QUOTE) {
      // To the string's closing quote; escapes skip what they escape.
      for (j++; j < bytes.length && bytes[j] !== QUOTE; j++) if (bytes[j] === BACKSLASH) j++;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth > 0) depth--;
      else if (c === 0x5d) {
        ends.push(j);
        break;
      } else return null;
    } else if (c === COMMA && depth === 0) {
      entries++;
      if (j - from >= BATCH_BYTES) {
        ends.push(j);
        from = j + 1;
      }
    }
  }
  const end = ends.at(-1);
  if (end === undefined || entries > MAX_KEYS) return null;
  i = skip(end + 1);
  if (bytes[i] !== 0x7d || skip(i + 1) !== bytes.length) return null;

  const builder = new KeysBuilder(slices, entries);
  from = start;
  for (const to of ends) {
    // The only batch may hold no entry at all: `[ ]`.
    if (!(ends.length === 1 && skip(from) === to)) {
      let parsed: unknown[];
      try {
        parsed = JSON.parse(`[${bytes.toString('utf8', from, to)}]`) as unknown[];
      } catch {
        return null;
      }
      // `[,` and `,]` are no JSON: a batch between two commas is never empty.
      if (parsed.length === 0) return null;
      for (const entry of parsed) {
        if (!validKeyEntry(entry) || builder.count === MAX_KEYS) return null;
        builder.add(entry);
        slices.tick();
      }
    }
    from = to + 1;
  }
  return builder.finish();
}
