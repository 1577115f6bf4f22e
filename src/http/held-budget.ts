/** The default of --max-held: requests with `wait` held at once by the whole process. */
export const DEFAULT_MAX_HELD = 100_000;

/**
 * The requests with `wait` the process may hold at once (--max-held,
 * docs/api.md, ETag and wait), counted in memory every serving thread
 * shares: a request past the budget is answered at once, as if it had no
 * `wait`.
 */
export class HeldBudget {
  private readonly held: Int32Array;

  /** `buffer`: the count every thread shares; a new one for the main thread. */
  constructor(readonly max: number, readonly buffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)) {
    this.held = new Int32Array(buffer);
  }

  /** Takes a place for one held request; false when none is left. */
  take(): boolean {
    if (Atomics.add(this.held, 0, 1) < this.max) return true;
    Atomics.sub(this.held, 0, 1);
    return false;
  }

  /** Gives a place back: its request is answered or gone. */
  give(): void {
    Atomics.sub(this.held, 0, 1);
  }

  /** Requests held by the whole process now. */
  get count(): number {
    return Atomics.load(this.held, 0);
  }
}
