/**
 * Ids of distinct IPv6 addresses, given as 8 groups: an open-addressing
 * table over their words, so that a snapshot of hundreds of thousands of
 * IPv6 addresses is read without a string or a map entry per address.
 */
export class AddressInterner {
  /** 4 words per id, most significant first (an AddressTable's layout). */
  words = new Uint32Array(4 * 1024);
  count = 0;
  private slots = new Int32Array(4096).fill(-1);

  /** Whether the last address `id` was given was new. */
  isNew = false;

  /** The id of the address in `groups`, a new one (the next number) when it is new; `isNew` says which. */
  id(groups: Uint16Array): number {
    const w0 = groups[0] * 65536 + groups[1];
    const w1 = groups[2] * 65536 + groups[3];
    const w2 = groups[4] * 65536 + groups[5];
    const w3 = groups[6] * 65536 + groups[7];
    const mask = this.slots.length - 1;
    const h = Math.imul(w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2, 0x85ebca77) ^ Math.imul(w3, 0xc2b2ae3d), 0x27d4eb2f);
    for (let s = (h ^ (h >>> 15)) & mask; ; s = (s + 1) & mask) {
      const id = this.slots[s];
      if (id < 0) {
        this.isNew = true;
        return this.add(s, w0, w1, w2, w3);
      }
      const k = id * 4;
      if (this.words[k] === w0 && this.words[k + 1] === w1 && this.words[k + 2] === w2 && this.words[k + 3] === w3) {
        this.isNew = false;
        return id;
      }
    }
  }

  private add(slot: number, w0: number, w1: number, w2: number, w3: number): number {
    const id = this.count++;
    if (id * 4 + 4 > this.words.length) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    const k = id * 4;
    this.words[k] = w0;
    this.words[k + 1] = w1;
    this.words[k + 2] = w2;
    this.words[k + 3] = w3;
    this.slots[slot] = id;
    // At most half full: probes stay short.
    if (this.count * 2 > this.slots.length) this.rehash();
    return id;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2).fill(-1);
    const groups = new Uint16Array(8);
    const count = this.count;
    this.count = 0;
    const words = this.words;
    this.words = new Uint32Array(words.length);
    for (let id = 0; id < count; id++) {
      for (let w = 0; w < 4; w++) {
        groups[w * 2] = words[id * 4 + w] >>> 16;
        groups[w * 2 + 1] = words[id * 4 + w] & 0xffff;
      }
      this.id(groups);
    }
  }
}
