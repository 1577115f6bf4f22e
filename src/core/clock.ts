/**
 * Every time read in the service goes through a Clock, so tests can freeze or
 * move time without sleeping.
 * - `nowMs` is wall-clock time (calendar days, `time` filter, timestamps).
 * - `monotonicMs` never jumps backwards; sliding windows use it. It reads
 *   the same in every thread of the process: the limits compare times that
 *   different threads took (docs/threads.md).
 */
export interface Clock {
  nowMs(): number;
  monotonicMs(): number;
  /** Where a clock that only moves when told to keeps its time, for other threads to read (SharedClock); absent for the system's. */
  readonly shared?: SharedArrayBuffer;
}

/**
 * performance.now() counts from this thread's start; the process's
 * monotonic clock (what process.hrtime reads) is the same for every thread.
 */
const threadOffsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now() + threadOffsetMs,
};

/** The time another thread's clock keeps in shared memory: wall, then monotonic, in milliseconds. */
export class SharedClock implements Clock {
  private readonly t: Float64Array;

  constructor(readonly shared: SharedArrayBuffer) {
    this.t = new Float64Array(shared);
  }

  nowMs(): number {
    return this.t[0];
  }

  monotonicMs(): number {
    return this.t[1];
  }
}
