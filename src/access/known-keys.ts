/**
 * Presented keys already hashed to a position of a key table, so that a
 * key's next request is a lookup, not a SHA-256 and a search
 * (docs/design.md, A key at a lookup's cost, compact). An open-addressing
 * table of slots (the string's hash, the position, where its characters are
 * kept, their count), each slot four words, and the characters in an arena
 * of fixed chunks: a lookup reads one slot and the characters it compares,
 * where a Map of strings reads a bucket, an entry and a string object, each
 * a read no processor cache holds for a crowd of keys. Only keys of the
 * table get here, each once, so the slots are laid out for the table's size
 * when it is made, and fill (and take memory) as keys are seen; nothing is
 * moved while requests come.
 */

/** Words per slot: hash, position + 1 (0: empty), arena offset, length. */
const SLOT = 4;
/** Characters per arena chunk: a key's characters never span two. */
const CHUNK = 1 << 15;
/** A key longer than this is not remembered: it is hashed again at each request (no client presents one). */
export const LONGEST_REMEMBERED = 512;

/** FNV-1a over a string's UTF-16 code units. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h | 0;
}

export class KnownKeys {
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly chunks: Uint16Array[] = [];
  /** Where the next key's characters go: chunk * CHUNK + index. */
  private next = 0;
  private count = 0;

  /** `capacity`: how many keys may be remembered (the table's size); at most 3/4 of the slots are ever used. */
  constructor(private readonly capacity: number) {
    let n = 8;
    while (n * 3 < capacity * 4) n *= 2;
    this.slots = new Int32Array(n * SLOT);
    this.mask = n - 1;
  }

  /** The position remembered for `key`, or -1. */
  get(key: string): number {
    const h = hashOf(key);
    const slots = this.slots;
    for (let i = h & this.mask; ; i = (i + 1) & this.mask) {
      const at = i * SLOT;
      const p = slots[at + 1];
      if (p === 0) return -1;
      if (slots[at] === h && slots[at + 3] === key.length && this.same(key, slots[at + 2])) return p - 1;
    }
  }

  /** Remembers `key` at `position`; a key too long, or one more than the table's size, is not. */
  set(key: string, position: number): void {
    if (key.length > LONGEST_REMEMBERED || this.count >= this.capacity) return;
    const h = hashOf(key);
    const slots = this.slots;
    let i = h & this.mask;
    for (; slots[i * SLOT + 1] !== 0; i = (i + 1) & this.mask) {
      const at = i * SLOT;
      if (slots[at] === h && slots[at + 3] === key.length && this.same(key, slots[at + 2])) return;
    }
    const offset = this.place(key);
    const at = i * SLOT;
    slots[at] = h;
    slots[at + 2] = offset;
    slots[at + 3] = key.length;
    slots[at + 1] = position + 1;
    this.count++;
  }

  /** Copies the characters of `key` into the arena: where they are. */
  private place(key: string): number {
    let chunk = Math.floor(this.next / CHUNK);
    let index = this.next % CHUNK;
    if (index + key.length > CHUNK) {
      chunk++;
      index = 0;
    }
    if (chunk === this.chunks.length) this.chunks.push(new Uint16Array(CHUNK));
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
