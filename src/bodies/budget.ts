/**
 * The memory that bodies in flight may take (--bodies-mb): buffers of bodies
 * kept whole while they are read, chunks kept for readers close behind,
 * the selections that productions render from, and compressed bodies. The
 * response cache has a budget of its own (--cache-mb).
 *
 * Takers that can do without (a body kept whole, a chunk kept in a ring, a
 * compressed body) ask first and back off when the budget is spent; what a
 * production cannot do without (its selection) is taken anyway, and makes
 * the others back off. Whatever is taken is given back when its last
 * reader leaves.
 */
export class BodyBudget {
  /** Bytes taken now, and the most ever taken at once. */
  used = 0;
  peak = 0;
  /** Times a taker was refused and did without. */
  refusals = 0;

  constructor(readonly limit: number) {}

  /** Takes `bytes` if they fit in what is left; false takes nothing. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.limit) {
      this.refusals++;
      return false;
    }
    this.take(bytes);
    return true;
  }

  /** Takes `bytes` that the work cannot do without, even past the limit. */
  take(bytes: number): void {
    this.used += bytes;
    if (this.used > this.peak) this.peak = this.used;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}
