import type { Clock } from '../../src/core/clock.js';

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private wallMs: number, private monoMs = 0) {}
  nowMs(): number { return this.wallMs; }
  monotonicMs(): number { return this.monoMs; }
  advance(ms: number): void { this.wallMs += ms; this.monoMs += ms; }
  set(wallMs: number): void { this.wallMs = wallMs; }
}
