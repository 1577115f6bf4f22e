import { SharedClock } from '../../src/core/clock.js';

/** A clock that only moves when told to; serving threads read the same time (core/clock.ts). */
export class ManualClock extends SharedClock {
  private readonly time: Float64Array;

  constructor(wallMs: number, monoMs = 0) {
    super(new SharedArrayBuffer(16));
    this.time = new Float64Array(this.shared);
    this.time[0] = wallMs;
    this.time[1] = monoMs;
  }

  advance(ms: number): void {
    this.time[0] += ms;
    this.time[1] += ms;
  }

  set(wallMs: number): void {
    this.time[0] = wallMs;
  }
}
