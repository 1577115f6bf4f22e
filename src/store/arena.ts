/**
 * The buffer a store's columns are carved from, sized for them before they
 * are built. One allocation that large is mapped by itself: the memory of a
 * store goes back to the system the moment the store is dropped, instead of
 * staying in the allocator's arenas (a column at a time, the RSS after a
 * few reloads of a large snapshot stayed near three stores), and the pages
 * of room never used are never touched. A column that finds no room left
 * gets an allocation of its own: the bound is a size, never a failure.
 */
export class ColumnArena {
  readonly buffer: ArrayBuffer;
  private pos = 0;

  constructor(bytes: number) {
    this.buffer = new ArrayBuffer(bytes);
  }

  u8(n: number): Uint8Array {
    const at = this.take(n);
    return at < 0 ? new Uint8Array(n) : new Uint8Array(this.buffer, at, n);
  }

  u16(n: number): Uint16Array {
    const at = this.take(n * 2);
    return at < 0 ? new Uint16Array(n) : new Uint16Array(this.buffer, at, n);
  }

  u32(n: number): Uint32Array {
    const at = this.take(n * 4);
    return at < 0 ? new Uint32Array(n) : new Uint32Array(this.buffer, at, n);
  }

  f64(n: number): Float64Array {
    const at = this.take(n * 8);
    return at < 0 ? new Float64Array(n) : new Float64Array(this.buffer, at, n);
  }

  /** A copy of `a` in the arena. */
  copy<T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T): T {
    const b = (a instanceof Uint8Array ? this.u8(a.length) : a instanceof Uint16Array ? this.u16(a.length) : a instanceof Uint32Array ? this.u32(a.length) : this.f64(a.length)) as T;
    b.set(a as never);
    return b;
  }

  /**
   * `a`, the last bytes taken, cut to its first `n` bytes: the rest is room
   * again. (Written up to a bound, then cut: no scratch copy.)
   */
  shrink(a: Uint8Array, n: number): Uint8Array {
    if (a.buffer !== this.buffer) return a.slice(0, n);
    this.pos = a.byteOffset + ((n + 7) & ~7);
    return new Uint8Array(this.buffer, a.byteOffset, n);
  }

  /** The offset of `bytes` more, 8-byte aligned, or -1 when they do not fit. */
  private take(bytes: number): number {
    const at = this.pos;
    const next = at + ((bytes + 7) & ~7);
    if (next > this.buffer.byteLength) return -1;
    this.pos = next;
    return at;
  }
}
