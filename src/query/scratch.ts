import type { Store } from '../store/store.js';
import type { Plan } from './plan.js';

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
  asnBits: Uint32Array = new Uint32Array(0);
  ipBits: Uint32Array = new Uint32Array(0);
  /** Rows a change set has seen. */
  marks: Uint32Array = new Uint32Array(0);
  /** Rows a change set found listed at its cursor as the same record. */
  same: Uint32Array = new Uint32Array(0);
  /** One-per-address marks: a row's address was taken when its stamp equals `stamp`. */
  addrStamp: Uint32Array = new Uint32Array(0);
  stamp = 0;
  private spares: Uint32Array[] = [];
  /** What `rows` holds now, when it is a whole selection (see `remember`); the snapshot by generation, never the store. */
  private last: { generation: number; plan: Plan; end: number; n: number } | null = null;

  /**
   * Notes that `rows[0..n)` is the selection of `plan` on `store` up to row
   * `end`: a request that needs it for its ETag and then for its body
   * selects once. Anything that writes `rows` again goes through `fit` or
   * `lendRows`, which forget it.
   */
  remember(store: Store, plan: Plan, end: number, n: number): void {
    this.last = { generation: store.source.generation, plan, end, n };
  }

  /** The count of the selection `remember` noted, if `rows` still holds it; else -1. */
  remembered(store: Store, plan: Plan, end: number): number {
    const l = this.last;
    return l !== null && l.generation === store.source.generation && l.plan === plan && l.end === end ? l.n : -1;
  }

  /** Makes room for a query on `store`. */
  fit(store: Store): this {
    this.last = null;
    if (this.rows.length < store.rows) this.rows = this.spareOf(store.rows) ?? new Uint32Array(store.rows);
    if (this.cityBits.length < store.words) {
      this.cityBits = new Uint32Array(store.words);
      this.asnBits = new Uint32Array(store.words);
      this.ipBits = new Uint32Array(store.words);
      this.marks = new Uint32Array(store.words);
      this.same = new Uint32Array(store.words);
    }
    if (this.addrStamp.length < store.c.addrCount) {
      this.addrStamp = new Uint32Array(store.c.addrCount);
      this.stamp = 0;
    }
    return this;
  }

  /** The first `n` selected rows, handed over; give them back with `giveBackRows` once unread. */
  lendRows(n: number): Uint32Array {
    this.last = null;
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
