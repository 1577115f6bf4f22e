import type { Store } from '../store/store.js';

/** Selections handed over and given back, kept for the next ones while they add up to no more than this. */
const SPARE_ROWS_LIMIT = 4 * 1024 * 1024;

/**
 * The working space of queries, owned by whoever runs them (requests run one
 * at a time on the event loop, so it is never shared by two at once). Sized
 * for the store at hand and grown when a larger one is swapped in.
 *
 * A selection that must outlive the request (a body still being produced)
 * is handed over with `lendRows`, and the scratch goes on with another
 * array: the selection is never copied, and never overwritten by the next
 * query.
 */
export class QueryScratch {
  rows: Uint32Array = new Uint32Array(0);
  cityBits: Uint32Array = new Uint32Array(0);
  ipBits: Uint32Array = new Uint32Array(0);
  /** Rows a change set has seen. */
  marks: Uint32Array = new Uint32Array(0);
  /** One-per-address marks: a row's address was taken when its stamp equals `stamp`. */
  addrStamp: Uint32Array = new Uint32Array(0);
  stamp = 0;
  private spares: Uint32Array[] = [];

  /** Makes room for a query on `store`. */
  fit(store: Store): this {
    if (this.rows.length < store.rows) this.rows = this.spareOf(store.rows) ?? new Uint32Array(store.rows);
    if (this.cityBits.length < store.words) {
      this.cityBits = new Uint32Array(store.words);
      this.ipBits = new Uint32Array(store.words);
      this.marks = new Uint32Array(store.words);
    }
    if (this.addrStamp.length < store.c.addrCount) {
      this.addrStamp = new Uint32Array(store.c.addrCount);
      this.stamp = 0;
    }
    return this;
  }

  /** The first `n` selected rows, handed over; give them back with `giveBackRows` once unread. */
  lendRows(n: number): Uint32Array {
    const lent = this.rows;
    this.rows = this.spareOf(lent.length) ?? new Uint32Array(lent.length);
    return lent.subarray(0, n);
  }

  giveBackRows(rows: Uint32Array): void {
    const whole = new Uint32Array(rows.buffer);
    const held = this.spares.reduce((sum, s) => sum + s.length, 0);
    if (held + whole.length <= SPARE_ROWS_LIMIT) this.spares.push(whole);
  }

  /** A spare of at least `length` rows, taken out of the spares. */
  private spareOf(length: number): Uint32Array | null {
    const i = this.spares.findIndex((s) => s.length >= length);
    return i < 0 ? null : this.spares.splice(i, 1)[0];
  }
}
