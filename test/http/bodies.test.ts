import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { readDigest, readRaw, sha256 } from '../helpers/http-read.js';
import { counters, settled, sharedProductions } from '../helpers/shared-productions.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * One production per body, as each engine sends it: with the cache kept
 * whole (the defaults), and with no room for whole bodies (a ring of
 * chunks). The budgets between them: test/bodies/production-budgets.test.ts.
 */
sharedProductions([
  { name: 'cache on (defaults): kept whole, then cached', options: {} },
  { name: 'cache off, no room for whole bodies: a ring of chunks', options: { cacheBytes: 0, wholeBodiesBytes: 0 } },
]);

/** The cron burst at full size: 30 clients fetch the 70 MB whole-store JSON of 200,000 records, beyond what the default cache keeps. */
const burst = suite<{ t: TestServer; reference: NaiveEngine; big: string }>('a burst of 30 readers of a 70 MB body (defaults)');
burst.before(async (ctx) => {
  const bigSnapshot = encodeSnapshot(generateRecords({ records: 200_000, seed: 33, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.reference = NaiveEngine.fromFile(bigSnapshot);
  ctx.big = sha256(ctx.reference.answer('key=x&time=100000&get=json', TEST_NOW_S * 1000).body);
  // Memory and fairness inside one serving thread.
  ctx.t = await startTestServer({ snapshot: bigSnapshot, options: { threads: 1 } });
});
burst.after((ctx) => ctx.t?.close());

burst('every reader gets the reference bytes, and small queries are answered right meanwhile', async ({ t, reference, big }) => {
  const small = ['type=http&count=100', 'get=json&count=20&country=us', 'type=socks5&anon=elite&time=300'];
  const expected = small.map((q) => reference.answer(`key=x&${q}`, TEST_NOW_S * 1000).body);
  const before = await counters(t);
  let bigDone = false;
  const reads = Promise.all(Array.from({ length: 30 }, () => readDigest(t.server.port, `/api?key=${TEST_KEY}&time=100000&get=json`))).finally(() => (bigDone = true));
  let answered = 0;
  while (!bigDone) {
    const i = answered % small.length;
    const r = await readRaw(t.server.port, `/api?key=${TEST_KEY}&${small[i]}`);
    assert.is(r.status, 200);
    assert.is(r.body.toString(), expected[i], small[i]);
    answered++;
  }
  for (const r of await reads) {
    assert.ok(r.bytes > 60_000_000, `${r.bytes} bytes`);
    assert.is(r.sha256, big);
  }
  assert.ok(answered > 0, 'small queries were answered during the burst');
  // The small answers are produced once each and then cached; the big body once for all 30.
  assert.is((await counters(t)).productions - before.productions, 1 + Math.min(answered, small.length), 'the big body was produced once');
  await settled(t);
});

burst.run();
