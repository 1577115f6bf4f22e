/**
 * glibc's malloc maps an allocation of 32 MiB or more by itself and unmaps it
 * when it is freed. A smaller one may be served from, and stay in, its arenas
 * after it is freed: the size it maps from rises, up to 32 MiB, with each
 * mapped block freed. So the buffers a build allocates and drops are asked
 * for at 32 MiB at least: the pages never touched cost no memory, and the
 * ones touched go back to the system when the buffer goes.
 */
const ALWAYS_MAPPED = 32 * 1024 * 1024;

const mappedSize = (bytes: number): number => (bytes < 1024 * 1024 ? bytes : Math.max(bytes, ALWAYS_MAPPED));

/** A zeroed buffer of `bytes` that goes back to the system when dropped (under 1 MiB, as it comes): for a build's scratch. */
export function mappedBuffer(bytes: number): ArrayBuffer {
  return new ArrayBuffer(mappedSize(bytes));
}

/**
 * The same, shared: what a store keeps (its columns, its history) is read
 * by every serving thread from one copy (docs/threads.md, One store).
 * Shared memory cannot be handed over, so it is shared from the start.
 */
export function sharedBuffer(bytes: number): SharedArrayBuffer {
  return new SharedArrayBuffer(mappedSize(bytes));
}

/** A copy of `a` in shared memory. */
export function sharedCopy<T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T): T {
  const Kind = a.constructor as new (b: SharedArrayBuffer, at: number, n: number) => T;
  const b = new Kind(new SharedArrayBuffer(a.byteLength), 0, a.length);
  b.set(a as never);
  return b;
}

/**
 * The buffer a store's columns are carved from, sized for them before they
 * are built, and mapped by itself (see mappedBuffer): the memory of a store
 * goes back to the system the moment the store is dropped, and the pages of
 * room never used are never touched. A column that finds no room left gets
 * an allocation of its own: the bound is a size, never a failure.
 */
export class ColumnArena {
  readonly buffer: SharedArrayBuffer;
  private pos = 0;

  constructor(bytes: number) {
    this.buffer = sharedBuffer(bytes);
  }

  u8(n: number): Uint8Array {
    const at = this.take(n);
    return new Uint8Array(at < 0 ? new SharedArrayBuffer(n) : this.buffer, Math.max(at, 0), n);
  }

  u16(n: number): Uint16Array {
    const at = this.take(n * 2);
    return new Uint16Array(at < 0 ? new SharedArrayBuffer(n * 2) : this.buffer, Math.max(at, 0), n);
  }

  u32(n: number): Uint32Array {
    const at = this.take(n * 4);
    return new Uint32Array(at < 0 ? new SharedArrayBuffer(n * 4) : this.buffer, Math.max(at, 0), n);
  }

  f64(n: number): Float64Array {
    const at = this.take(n * 8);
    return new Float64Array(at < 0 ? new SharedArrayBuffer(n * 8) : this.buffer, Math.max(at, 0), n);
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
    if (a.buffer !== this.buffer) return sharedCopy(a.subarray(0, n));
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
