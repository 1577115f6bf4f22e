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
