import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { metricValue, readRaw } from '../helpers/http-read.js';
import { TEST_KEY, TEST_NOW_S, serverSuite } from '../helpers/server.js';

/** Compressed bodies (docs/api.md, Compressed bodies): negotiated, exact once decoded, announced with their encoded length, compressed once. */
const snapshot = encodeSnapshot(generateRecords({ records: 20_000, seed: 41, now: TEST_NOW_S }), TEST_NOW_S);
const reference = NaiveEngine.fromFile(snapshot);
const decode = { gzip: gunzipSync, br: brotliDecompressSync } as const;

const QUERIES = [
  'count=200', 'get=txt.file&type_prefix=1', 'time=99999',
  'get=json&count=30', 'get=json.file&format=object&count=40&lang=en', 'get=json&wrap=1&count=50&pretty=0',
  'get=json&time=99999', 'get=json&time=99999&fields=ip,city&split_ip=1',
];

for (const cache of [true, false]) {
  // Readers share a compression within one serving thread: one thread.
  const test = serverSuite(`compressed bodies (cache ${cache ? 'on' : 'off'})`, () => ({ snapshot, options: cache ? { threads: 1 } : { cacheBytes: 0, threads: 1 } }));

  test('gzip and br bodies decode to the reference bytes; Content-Length is the encoded length, HEAD included', async ({ t }) => {
    const nowMs = t.clock.nowMs();
    for (const q of QUERIES) {
      const path = `/api?key=${TEST_KEY}&${q}`;
      const plain = reference.answer(`key=x&${q}`, nowMs).body;
      const normalize = (s: string) => s.replace(/"timestamp": ?"[^"]+"/, '"timestamp":"T"');
      assert.ok(Buffer.byteLength(plain) >= 1024, `?${q} is ${plain.length} bytes`);
      for (const encoding of ['gzip', 'br'] as const) {
        const r = await readRaw(t.server.port, path, { headers: { 'accept-encoding': encoding } });
        assert.is(r.status, 200);
        assert.is(r.headers['content-encoding'], encoding, `?${q}`);
        assert.is(r.headers.vary, 'Accept-Encoding');
        assert.is(r.headers['content-length'], String(r.body.length), `Content-Length of ?${q} in ${encoding}`);
        const decoded = decode[encoding](r.body).toString();
        if (normalize(decoded) !== normalize(plain)) assert.fixture(decoded, plain, `?${q} in ${encoding}`);
        const head = await readRaw(t.server.port, path, { method: 'HEAD', headers: { 'accept-encoding': encoding } });
        assert.is(head.headers['content-encoding'], encoding);
        assert.is(head.headers['content-length'], String(r.body.length), `HEAD of ?${q} in ${encoding}`);
        assert.is(head.body.length, 0);
      }
    }
  });

  test('bodies under 1 KB and errors are never compressed; q=0 is honoured', async ({ t }) => {
    const small = await readRaw(t.server.port, `/api?key=${TEST_KEY}&count=3`, { headers: { 'accept-encoding': 'gzip, br' } });
    assert.is(small.status, 200);
    assert.ok(small.body.length < 1024);
    assert.is(small.headers['content-encoding'], undefined);
    assert.is(small.headers.vary, 'Accept-Encoding');
    for (const path of [`/api?key=nope&time=99999`, `/api?key=${TEST_KEY}&type=bogus`, '/nowhere']) {
      const e = await readRaw(t.server.port, path, { headers: { 'accept-encoding': 'gzip, br' } });
      assert.ok(e.status >= 400);
      assert.is(e.headers['content-encoding'], undefined, path);
      assert.match(e.body.toString(), /^Error: /);
    }
    const big = `/api?key=${TEST_KEY}&time=99999`;
    const none = await readRaw(t.server.port, big, { headers: { 'accept-encoding': 'gzip;q=0, br;q=0' } });
    assert.is(none.headers['content-encoding'], undefined);
    assert.is(none.body.toString(), reference.answer(`key=x&time=99999`, t.clock.nowMs()).body);
    const gz = await readRaw(t.server.port, big, { headers: { 'accept-encoding': 'br;q=0, gzip' } });
    assert.is(gz.headers['content-encoding'], 'gzip');
    const plainToo = await readRaw(t.server.port, big);
    assert.is(plainToo.headers['content-encoding'], undefined, 'no Accept-Encoding, no coding');
  });

  test('concurrent readers of one compressed body share one compression', async ({ t }) => {
    const path = `/api?key=${TEST_KEY}&get=json&time=99999&lang=en`;
    const count = async () => metricValue(await (await t.get('/metrics')).text(), 'proxylist_body_compressions_total');
    const before = await count();
    const reads = await Promise.all(Array.from({ length: 20 }, () => readRaw(t.server.port, path, { headers: { 'accept-encoding': 'br' } })));
    assert.is((await count()) - before, 1, 'one compression');
    for (const r of reads) assert.ok(r.body.equals(reads[0].body), 'the same bytes for all');
    assert.is(brotliDecompressSync(reads[0].body).toString(), reference.answer(`key=x&get=json&time=99999&lang=en`, t.clock.nowMs()).body);
  });

  test.run();
}
