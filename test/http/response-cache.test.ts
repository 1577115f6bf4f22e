import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ResponseCache } from '../../src/bodies/response-cache.js';

const body = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i & 255);
const entry = (bytes: Uint8Array, rows: Uint32Array | null = null) => ({ bytes, tail: null, end: 1, rows, ends: null });

test('a body handed over by a borrower is copied: reusing the buffer does not change what is cached', () => {
  const cache = new ResponseCache(1 << 20);
  const borrowed = body(1000);
  const sent = cache.offer('k', entry(borrowed), false)!;
  borrowed.fill(0);
  assert.equal(Array.from(sent.subarray(0, 4)), [0, 1, 2, 3]);
  assert.is(cache.lookup('k', 1, null!, null!)!.bytes, sent);
});

test('a narrowed view is kept without a copy while it uses half of its buffer or more, and counted at its whole buffer', () => {
  const cache = new ResponseCache(1 << 20);
  const wide = body(10_000);
  const rows = new Uint32Array(100);
  const sent = cache.offer('k', entry(wide.subarray(0, 6000), rows.subarray(0, 60)), true)!;
  assert.is(sent.buffer, wide.buffer, 'no copy');
  assert.is(cache.bytes, 10_000 + 400, 'the buffers it keeps alive');
});

test('a view of less than half of its buffer is compacted, so narrowing never keeps more than twice the body', () => {
  const cache = new ResponseCache(1 << 20);
  const wide = body(10_000);
  const sent = cache.offer('k', entry(wide.subarray(0, 4000), new Uint32Array(100).subarray(0, 10)), true)!;
  assert.is.not(sent.buffer, wide.buffer);
  assert.is(sent.buffer.byteLength, 4000);
  assert.equal(Array.from(sent.subarray(3998)), [3998 & 255, 3999 & 255]);
  assert.is(cache.bytes, 4000 + 40);
});

test('a body over half of the cache is not kept', () => {
  const cache = new ResponseCache(10_000);
  assert.is(cache.offer('k', entry(body(5001)), false), undefined);
  assert.is(cache.lookup('k', 1, null!, null!), undefined);
  assert.ok(cache.offer('k', entry(body(5000)), false));
});

test.run();
