/**
 * Presented keys already hashed to a position of a key table, so that a
 * key's next request is a lookup, not a SHA-256 and a search
 * (docs/design.md, A key at a lookup's cost, compact). An open-addressing
 * table of slots, sized for the table's keys at 3/4 full, and the keys'
 * characters in an arena of fixed chunks, a byte each (a key with a
 * character beyond Latin-1 is not remembered: like one too long, it is
 * found by its hash at each request; keys are tokens of ASCII). A
 * slot holds what a request of the key reads: the string's hash, the
 * key's position, where its characters are kept and their count, until
 * when it may be used, and a hint of where the limiter keeps its usage
 * (access/shared-usage.ts). A lookup reads one slot and the characters it
 * compares, where a Map of strings reads a bucket, an entry and a string
 * object, and the keys table and the usage table two more places, each a
 * read no processor cache holds for a crowd of keys. Only keys of the
 * table get here, each once, so the slots are laid out for the table's
 * size when it is made, and fill (and take memory) as keys are seen;
 * nothing is moved while requests come.
 */

/** Words per slot: hash, position + 1 (0: empty), arena offset, length, the usage hint's two words, until when the key may be used (a 64-bit float). */
const SLOT = 8;
const HASH = 0;
const POSITION = 1;
const OFFSET = 2;
const LENGTH = 3;
/** Where a slot's usage hint is, from the slot's start (SharedUsage.record reads and writes its two words). */
export const HINT = 4;
/** The 64-bit word of a slot that says until when its key may be used. */
const USABLE_UNTIL = 3;
/** Bytes (characters) per arena chunk: a key's characters never span two. */
const CHUNK = 1 << 16;
/** A key longer than this is not remembered: it is hashed again at each request (no client presents one). */
export const LONGEST_REMEMBERED = 512;

/** FNV-1a over a string's UTF-16 code units. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** Whether every character of `s` is one byte in the arena: keys are tokens of ASCII. */
function latin1(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return false;
  return true;
}

export class KnownKeys {
  /** The slots, as 32-bit words: a remembered key's slot is where its words begin. */
  readonly slots: Int32Array;
  private readonly f64: Float64Array;
  /** How many slots there are: not a power of two, which would take up to twice the memory a table of 3/4 full needs. */
  private readonly size: number;
  private readonly chunks: Uint8Array[] = [];
  /** Where the next key's characters go: chunk * CHUNK + index. */
  private next = 0;
  private count = 0;

  /** `capacity`: how many keys may be remembered (the table's size); at most 3/4 of the slots are ever used. */
  constructor(private readonly capacity: number) {
    const n = Math.max(8, Math.ceil((capacity * 4) / 3) + 1);
    this.slots = new Int32Array(n * SLOT);
    this.f64 = new Float64Array(this.slots.buffer);
    this.size = n;
  }

  /** The slot of `key`, or -1 when it is not remembered. */
  slotOf(key: string): number {
    const h = hashOf(key);
    const slots = this.slots;
    const size = this.size;
    for (let i = (h >>> 0) % size; ; i = i + 1 === size ? 0 : i + 1) {
      const at = i * SLOT;
      if (slots[at + POSITION] === 0) return -1;
      if (slots[at + HASH] === h && slots[at + LENGTH] === key.length && this.same(key, slots[at + OFFSET])) return at;
    }
  }

  /** The key's position in its table. */
  positionAt(slot: number): number {
    return this.slots[slot + POSITION] - 1;
  }

  /** Until when the key may be used: its expiry, Infinity, or -Infinity when disabled. */
  usableUntilAt(slot: number): number {
    return this.f64[slot / 2 + USABLE_UNTIL];
  }

  /**
   * Remembers `key` at `position`, usable until `usableUntil`: its slot, or
   * -1 for a key too long, or one more than the table's size.
   */
  set(key: string, position: number, usableUntil: number): number {
    if (key.length > LONGEST_REMEMBERED || this.count >= this.capacity || !latin1(key)) return -1;
    const found = this.slotOf(key);
    if (found >= 0) return found;
    const slots = this.slots;
    const h = hashOf(key);
    const size = this.size;
    let i = (h >>> 0) % size;
    while (slots[i * SLOT + POSITION] !== 0) i = i + 1 === size ? 0 : i + 1;
    const at = i * SLOT;
    slots[at + HASH] = h;
    slots[at + OFFSET] = this.place(key);
    slots[at + LENGTH] = key.length;
    this.f64[at / 2 + USABLE_UNTIL] = usableUntil;
    slots[at + POSITION] = position + 1;
    this.count++;
    return at;
  }

  /** Copies the characters of `key` into the arena: where they are. */
  private place(key: string): number {
    let chunk = Math.floor(this.next / CHUNK);
    let index = this.next % CHUNK;
    if (index + key.length > CHUNK) {
      chunk++;
      index = 0;
    }
    if (chunk === this.chunks.length) this.chunks.push(new Uint8Array(CHUNK));
    const into = this.chunks[chunk];
    for (let k = 0; k < key.length; k++) into[index + k] = key.charCodeAt(k);
    const offset = chunk * CHUNK + index;
    this.next = offset + key.length;
    return offset;
  }

  private same(key: string, offset: number): boolean {
    const chars = this.chunks[Math.floor(offset / CHUNK)];
    const from = offset % CHUNK;
    for (let k = 0; k < key.length; k++) if (chars[from + k] !== key.charCodeAt(k)) return false;
    return true;
  }
}
