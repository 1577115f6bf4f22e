/**
 * Work in slices on a thread of its own: after each slice of about a
 * millisecond the thread sleeps briefly, so a serving thread that shares its
 * core runs then, rather than waiting out the kernel's time slice, several
 * times longer (what the thread's start and the engine's own compilation
 * take is not sliced).
 */
export interface Slices {
  /** Called between items of work (`weight` items' worth); pauses when the slice is spent. */
  tick(weight?: number): void;
}

/** No pauses: work on an event loop, or in tests, in one go. */
export const NO_SLICES: Slices = { tick() {} };

/** Work that should end soon: about a millisecond, then a short pause. */
export const BRIEF_PAUSES = { sliceMs: 1, pauseMs: 0.2 };
/**
 * Work that can wait, on a core a serving thread wants: a tenth of the
 * core, in slices short enough that a request waits at most half a
 * millisecond behind one.
 */
export const LONG_PAUSES = { sliceMs: 0.5, pauseMs: 4.5 };
/** Items of work between two readings of the clock. */
const CHECK_EVERY = 16;

export class TimedSlices implements Slices {
  private readonly sleeper = new Int32Array(new SharedArrayBuffer(4));
  private started = performance.now();
  private items = 0;

  constructor(private readonly pauses = BRIEF_PAUSES) {}

  tick(weight = 1): void {
    if ((this.items += weight) < CHECK_EVERY) return;
    this.items = 0;
    if (performance.now() - this.started < this.pauses.sliceMs) return;
    Atomics.wait(this.sleeper, 0, 0, this.pauses.pauseMs);
    this.started = performance.now();
  }
}
