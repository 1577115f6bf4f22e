/**
 * Every time read in the service goes through a Clock, so tests can freeze or
 * move time without sleeping.
 * - `nowMs` is wall-clock time (calendar days, `time` filter, timestamps).
 * - `monotonicMs` never jumps backwards; sliding windows use it.
 */
export interface Clock {
  nowMs(): number;
  monotonicMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
};

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private wallMs: number, private monoMs = 0) {}
  nowMs(): number { return this.wallMs; }
  monotonicMs(): number { return this.monoMs; }
  advance(ms: number): void { this.wallMs += ms; this.monoMs += ms; }
  set(wallMs: number): void { this.wallMs = wallMs; }
}
