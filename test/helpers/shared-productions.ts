import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { metricValue, readDigest, readRaw, sha256 } from './http-read.js';
import { atRate, throttledRead } from '../../support/slow-read.js';
import type { ServeOptions } from '../../src/server.js';
import { TEST_KEY, TEST_NOW_S, eventually, type TestServer, serverSuite } from './server.js';

/**
 * One production per body: concurrent readers of a body that is being
 * produced share it, whatever their speeds. The suites run in two files:
 * the default budgets and the ring of chunks in test/http/bodies.test.ts,
 * which runs on every engine and runtime; the budgets between them in
 * test/bodies/production-budgets.test.ts, which the bodies' own code decides.
 */
const snapshot = encodeSnapshot(generateRecords({ records: 65_000, seed: 31, now: TEST_NOW_S }), TEST_NOW_S);
const reference = NaiveEngine.fromFile(snapshot);
const DUMP_QUERY = 'get=json&time=99999';
const DUMP = `/api?key=${TEST_KEY}&${DUMP_QUERY}`;
const want = reference.answer(`key=x&${DUMP_QUERY}`, TEST_NOW_S * 1000).body;
const wantSha = sha256(want);

const metrics = async (t: TestServer): Promise<string> => (await t.get('/metrics')).text();
export const counters = async (t: TestServer) => {
  const text = await metrics(t);
  return {
    productions: metricValue(text, 'proxylist_body_productions_total'),
    joins: metricValue(text, 'proxylist_body_joins_total'),
    hits: metricValue(text, 'proxylist_response_cache_hits_total'),
    repeats: metricValue(text, 'proxylist_repeated_answers_total'),
    inFlight: metricValue(text, 'proxylist_body_productions_in_flight'),
    streaming: metricValue(text, 'proxylist_responses_streaming'),
  };
};
/** Nothing left under way or pending, once the readers are done. */
export const settled = (t: TestServer) =>
  eventually(async () => {
    const c = await counters(t);
    return c.inFlight === 0 && c.streaming === 0;
  }, 10_000, 'no production under way and no body pending');

/** A suite of shared productions per setup: the server's options, and the name that says what they make of a 20 MB body. */
export function sharedProductions(setups: ReadonlyArray<{ name: string; options: Partial<ServeOptions> }>): void {
  for (const setup of setups) {
    // What happens inside one serving thread (its cache, its productions): one thread.
    const test = serverSuite(`shared productions (${setup.name})`, () => ({ snapshot, options: { ...setup.options, threads: 1 } }));

    test('30 concurrent readers of one body get the reference bytes from one production', async ({ t }) => {
      assert.ok(want.length > 20_000_000, `the dump is ${want.length} bytes`);
      const before = await counters(t);
      const reads = await Promise.all(Array.from({ length: 30 }, () => readDigest(t.server.port, DUMP)));
      for (const r of reads) {
        assert.is(r.status, 200);
        assert.is(r.headers['content-length'], String(Buffer.byteLength(want)));
        assert.is(r.bytes, Buffer.byteLength(want));
        assert.is(r.sha256, wantSha);
      }
      const after = await counters(t);
      assert.is(after.productions - before.productions, 1, 'one production');
      // A request that came once the body was complete and cached is a cache hit instead, or a repeated answer.
      assert.is(after.joins - before.joins + (after.hits - before.hits) + (after.repeats - before.repeats), 29, 'the others joined it');
      await settled(t);
    });

    test('readers at different speeds, one at 100 KB/s and one pausing, get whole and identical bodies', async ({ t }) => {
      const slow = throttledRead(t.server.port, DUMP, atRate(100_000, 2000));
      let paused = false;
      const pausing = throttledRead(t.server.port, DUMP, (received) => {
        if (paused || received < 3_000_000) return 0;
        paused = true;
        return 2000;
      });
      const fast = await Promise.all(Array.from({ length: 5 }, () => readDigest(t.server.port, DUMP)));
      for (const r of fast) assert.is(r.sha256, wantSha);
      const [s, p] = await Promise.all([slow, pausing]);
      assert.ok(s.throttledBytes < 1_000_000, `${s.throttledBytes} bytes read while slow: the reader was not slow`);
      assert.is(sha256(s.body), wantSha, 'the slow reader');
      assert.is(sha256(p.body), wantSha, 'the pausing reader');
      await settled(t);
    });

    test('readers that walk away mid-body leave nothing under way, nothing pending, and the body is served whole after', async ({ t }) => {
      await Promise.all(Array.from({ length: 30 }, (_, i) => readDigest(t.server.port, `${DUMP}&_=${i % 3}`, { onChunk: (_c, n) => n < 64 * 1024 })));
      await settled(t);
      const r = await readDigest(t.server.port, DUMP);
      assert.is(r.sha256, wantSha);
    });

    test('a narrower window of a body under way reads a prefix of it, byte for byte as the reference writes it', async ({ t }) => {
      // Bodies larger than what the kernel's socket buffers take in at once, so that a slow reader keeps the production under way.
      for (const q of ['get=json&time=3000', 'get=json&time=3000&format=object&lang=en&split_ip=1']) {
        const path = `/api?key=${TEST_KEY}&${q}`;
        // A slow reader keeps the production under way while the clock moves on and rows leave the window.
        const slow = throttledRead(t.server.port, path, atRate(200_000, 2000));
        await new Promise((r) => setTimeout(r, 300));
        const before = await counters(t);
        t.clock.advance(45_000);
        const narrowed = await readRaw(t.server.port, path).finally(() => t.clock.advance(-45_000));
        const after = await counters(t);
        const wantNow = reference.answer(`key=x&${q}`, t.clock.nowMs() + 45_000).body;
        const wantThen = reference.answer(`key=x&${q}`, t.clock.nowMs()).body;
        assert.ok(wantNow.length < wantThen.length, `rows left the window of ?${q}`);
        assert.is(narrowed.headers['content-length'], String(Buffer.byteLength(wantNow)));
        if (narrowed.body.toString() !== wantNow) assert.fixture(narrowed.body.toString().slice(-300), wantNow.slice(-300), `?${q}`);
        assert.is(after.productions - before.productions, 0, `?${q} was not produced again`);
        assert.is(after.joins - before.joins, 1, `?${q} joined the production under way`);
        assert.is(sha256((await slow).body), sha256(wantThen), 'the slow reader got the wider window');
        await settled(t);
      }
    });

    test('small queries are answered, right, while 30 clients read the dump', async ({ t }) => {
      const small = ['type=http&count=100', 'get=json&count=20&country=us', 'type=socks5&anon=elite&time=300'];
      const expected = small.map((q) => reference.answer(`key=x&${q}`, TEST_NOW_S * 1000).body);
      let bigDone = false;
      const big = Promise.all(Array.from({ length: 30 }, () => readDigest(t.server.port, DUMP))).finally(() => (bigDone = true));
      let answered = 0;
      while (!bigDone || answered < 3) {
        const i = answered % small.length;
        const r = await readRaw(t.server.port, `/api?key=${TEST_KEY}&${small[i]}`);
        assert.is(r.status, 200);
        assert.is(r.body.toString(), expected[i], small[i]);
        answered++;
      }
      for (const r of await big) assert.is(r.sha256, wantSha);
      assert.ok(answered >= 3);
    });

    test.run();
  }
}
