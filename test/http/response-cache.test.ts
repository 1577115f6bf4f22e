import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ResponseCache } from '../../src/bodies/response-cache.js';
import { execute } from '../../src/query/execute.js';
import { parsePlan } from '../../src/query/parse.js';
import { readQuery } from '../../src/query/query-string.js';
import { QueryScratch } from '../../src/query/scratch.js';
import { BodyWriter } from '../../src/render/envelope.js';
import { OutputBuffer } from '../../src/render/output-buffer.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { Store } from '../../src/store/store.js';
import { buildFromRecords } from '../helpers/build-store.js';
import { TEST_NOW_S } from '../helpers/server.js';

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

test('a JSON body narrowed to a narrower window is one buffer that ends with its close, kept for the next request', () => {
  const records = generateRecords({ records: 300, seed: 7, now: TEST_NOW_S });
  const { columns, meta } = buildFromRecords(records, undefined, TEST_NOW_S);
  const store = new Store(columns, meta, { file: 'x', loadedAtMs: 0, generation: 1 });
  for (const q of ['get=json&pretty=0', 'get=json']) {
    const parsed = parsePlan(readQuery(`${q}&time=3600`), meta.services);
    if (!parsed.ok) throw new Error(parsed.message);
    const plan = parsed.plan;
    const scratch = new QueryScratch();
    const wideEnd = store.prefixEnd(TEST_NOW_S - plan.time);
    const n = execute(store, plan, wideEnd, scratch);
    const rows = scratch.rows.slice(0, n);
    const ends = new Uint32Array(n);
    const out = new OutputBuffer();
    new BodyWriter(store, plan, rows, n, TEST_NOW_S * 1000).write(out, 0, n, ends);
    const cache = new ResponseCache(1 << 20);
    cache.offer('k', { bytes: out.view(), tail: null, end: wideEnd, rows, ends }, false);
    // Half of the window's rows gone: the answer of the narrower window.
    const end = rows[n >> 1];
    const narrowed = cache.lookup('k', end, store, plan)!;
    assert.is(narrowed.tail, null, `${q}: the close is in the body`);
    const k = n >> 1;
    const want = new OutputBuffer();
    new BodyWriter(store, plan, rows.subarray(0, k), k, TEST_NOW_S * 1000).write(want, 0, k);
    assert.is(Buffer.from(narrowed.bytes).toString(), Buffer.from(want.view()).toString(), `${q}: the narrower window's bytes`);
    assert.is(narrowed.bytes.buffer.byteLength, narrowed.bytes.length, `${q}: a buffer of its own, no larger`);
    assert.is(cache.lookup('k', end, store, plan)!.bytes, narrowed.bytes, `${q}: kept`);
  }
});

test.run();
