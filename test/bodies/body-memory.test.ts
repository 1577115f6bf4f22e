import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BodyMemory } from '../../src/bodies/body-memory.js';

/** The memory of bodies in flight (bodies/body-memory.ts): every byte a body keeps is counted, the spare is reused, nothing passes the budget that could do without. */
const KB = 1024;

test('claims come from the budget; a reusable buffer given back is the next claim, counted once', () => {
  const m = new BodyMemory(100 * KB, 16 * KB, 4);
  const a = m.claim(40 * KB)!;
  assert.is(a.length, 40 * KB);
  assert.is(m.budget.used, 40 * KB);
  m.unclaim(a, true);
  assert.is(m.budget.used, 40 * KB, 'the spare stays counted');
  const b = m.claim(30 * KB)!;
  assert.is(b.buffer, a.buffer, 'the spare changes hands');
  assert.is(b.length, 30 * KB);
  assert.is(m.budget.used, 40 * KB);
  m.unclaim(b, false);
  assert.is(m.budget.used, 0, 'a buffer the cache took, or that is not reusable, is given back whole');
});

test('a claim past the budget first drops the spare, then is refused and counted; nothing is taken', () => {
  const m = new BodyMemory(100 * KB, 16 * KB, 4);
  m.unclaim(m.claim(60 * KB)!, true);
  const big = m.claim(70 * KB);
  assert.ok(big, 'room once the spare is dropped');
  assert.is(m.budget.used, 70 * KB);
  assert.is(m.claim(40 * KB), null);
  assert.is(m.budget.refusals >= 1, true);
  assert.is(m.budget.used, 70 * KB);
  assert.is(m.budget.peak, 70 * KB);
});

test('the chunk pool hands out buffers of its size again, and never more than it keeps', () => {
  const m = new BodyMemory(100 * KB, 16 * KB, 1);
  const a = m.pool.take(10 * KB);
  assert.is(a.length, 16 * KB);
  m.pool.giveBack(a);
  m.pool.giveBack(m.pool.take(16 * KB + 1)); // larger than a chunk: not kept
  assert.is(m.pool.take(1), a, 'the same buffer again');
  assert.is.not(m.pool.take(1), a, 'one kept at most');
});

test.run();
