const PAGE = 64 * 1024;
/**
 * A buffer that grew past this for one large body is not kept as the working
 * buffer after it. Room for the default window's JSON of a million records.
 */
const RETAIN_LIMIT = 96 * 1024 * 1024;
/**
 * Lent buffers given back and kept for reuse: at most this many bytes of
 * them. With RETAIN_LIMIT, at most 192 MB stay allocated between requests,
 * and only the pages written count in memory.
 */
const SPARE_LIMIT = 96 * 1024 * 1024;

/**
 * One reusable byte buffer, grown in pages. Renderers reserve the worst case
 * for a row, then write with plain index stores. The bytes are valid until the
 * next `reset()`, or are lent to whoever must keep them longer.
 *
 * Buffers lent to responses still being sent come back as spares once sent:
 * a large body then lands in pages already mapped, where a fresh allocation
 * would pay a page fault per 4 KB written and the garbage collector later.
 */
export class OutputBuffer {
  buf: Uint8Array = new Uint8Array(PAGE);
  pos = 0;
  private spares: Uint8Array[] = [];
  private spareBytes = 0;

  reset(): void {
    if (this.buf.length > RETAIN_LIMIT) {
      this.giveBack(this.buf);
      this.buf = new Uint8Array(PAGE);
    }
    this.pos = 0;
  }

  /**
   * Leaves the bytes written to whoever holds them now (a response still
   * being sent) and goes on with a fresh buffer, which grows into a spare
   * when needed: lending is cheaper than copying out a body of megabytes.
   * Returns the lent buffer, for `giveBack` once its bytes are no longer
   * needed.
   */
  lend(): Uint8Array {
    const lent = this.buf;
    this.buf = new Uint8Array(PAGE);
    this.pos = 0;
    return lent;
  }


  /**
   * Room for `bytes` more. Growth prefers a spare; otherwise it is not
   * zero-filled (allocUnsafe): callers that know an upper bound for a whole
   * body reserve it at once, and pages never written are never touched, so a
   * generous bound costs no memory.
   */
  reserve(bytes: number): Uint8Array {
    const need = this.pos + bytes;
    if (need > this.buf.length) {
      const size = Math.ceil(Math.max(need, this.buf.length * 2) / PAGE) * PAGE;
      let grown = this.takeSpare(need);
      if (!grown) {
        const raw = Buffer.allocUnsafe(size);
        // A plain Uint8Array view: renderers then see one array type only.
        grown = new Uint8Array(raw.buffer, raw.byteOffset, size);
      }
      grown.set(this.buf.subarray(0, this.pos));
      this.giveBack(this.buf);
      this.buf = grown;
    }
    return this.buf;
  }

  /** The smallest spare of at least `bytes`, taken out of the spares. */
  private takeSpare(bytes: number): Uint8Array | null {
    let best = -1;
    for (let i = 0; i < this.spares.length; i++) {
      const len = this.spares[i].length;
      if (len >= bytes && (best < 0 || len < this.spares[best].length)) best = i;
    }
    if (best < 0) return null;
    const [spare] = this.spares.splice(best, 1);
    this.spareBytes -= spare.length;
    return spare;
  }

  /** Takes back a lent (or outgrown) buffer whose bytes nobody reads any more, as a spare while they fit. */
  giveBack(buf: Uint8Array): void {
    if (buf.length <= PAGE || this.spareBytes + buf.length > SPARE_LIMIT) return;
    this.spares.push(buf);
    this.spareBytes += buf.length;
  }

  /** Appends bytes from anywhere (a cold path: Buffers welcome). */
  append(bytes: Uint8Array): void {
    this.reserve(bytes.length).set(bytes, this.pos);
    this.pos += bytes.length;
  }

  view(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

export const dataView = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

/**
 * Copies src[start, end), at least four bytes, to dst at pos, eight bytes at
 * a time as float64 (four under eight), the last word overlapping the
 * previous ones: nothing is read or written outside the range. V8 runs a
 * byte loop one byte per iteration; this moves eight per iteration.
 *
 * Moving bytes as doubles is exact unless they read as a NaN, which a CPU or
 * engine may rewrite: that needs 0x7F or 0xFF as the last byte of the eight
 * and a byte of 0xF0 or more before it, which never occurs in UTF-8 (0xFF is
 * not UTF-8, and 0xF0–0xF4 are followed by a continuation byte). Every byte
 * string copied this way is UTF-8 text.
 */
export function copyWords(dst: DataView, pos: number, src: DataView, start: number, end: number): number {
  const shift = pos - start;
  if (end - start >= 8) {
    for (let s = start; s + 8 < end; s += 8) dst.setFloat64(s + shift, src.getFloat64(s, true), true);
    dst.setFloat64(end - 8 + shift, src.getFloat64(end - 8, true), true);
  } else {
    dst.setUint32(start + shift, src.getUint32(start, true), true);
    dst.setUint32(end - 4 + shift, src.getUint32(end - 4, true), true);
  }
  return end + shift;
}
