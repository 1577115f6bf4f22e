import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, serveProcesses } from '../helpers/cli.js';
import { TEST_KEY, TEST_NOW_S, eventually, startTestServer, type TestServer } from '../helpers/server.js';

/** `wait` (docs/api.md, ETag and wait): a conditional request held until its answer changes. */
const records = generateRecords({ records: 3000, seed: 71, now: TEST_NOW_S });
// Rows of a country of their own that leave the default window one per second, from 1 s on.
const leaving = records.slice(0, 30).map((r, i) => ({ ...r, country: 'ZW', ip: `198.51.100.${i + 1}`, checked_at: TEST_NOW_S - 600 + i }));
const first = encodeSnapshot([...records.filter((r) => r.country.toUpperCase() !== 'ZW'), ...leaving], TEST_NOW_S);
const second = encodeSnapshot(generateRecords({ records: 3000, seed: 72, now: TEST_NOW_S }), TEST_NOW_S + 1);

const test = suite<{ t: TestServer }>('wait');
test.before(async (ctx) => {
  // The cache off: held requests that wake together must still share one production.
  // The held requests of one serving thread, and its productions (threads/serving.test.ts holds them across threads).
  ctx.t = await startTestServer({ snapshot: first, options: { cacheBytes: 0, threads: 1 } });
});
test.after((ctx) => ctx.t?.close());

const url = (t: TestServer, q: string) => `${t.base}/api?key=${TEST_KEY}&${q}`;
const tagOf = async (t: TestServer, q: string): Promise<string> => {
  const res = await fetch(url(t, q));
  await res.arrayBuffer();
  return res.headers.get('etag')!;
};
const held = (t: TestServer, q: string, etag: string, signal?: AbortSignal) => {
  const started = performance.now();
  return fetch(url(t, q), { headers: { 'if-none-match': etag }, signal }).then(async (res) => ({ res, body: await res.text(), ms: performance.now() - started }));
};

test('no change: 304 once the wait runs out, and not before; a longer wait beside it is still held', async ({ t }) => {
  const q = 'time=99999&count=5';
  const etag = await tagOf(t, q);
  const longer = new AbortController();
  const other = held(t, `${q}&wait=60`, etag, longer.signal).catch((err: Error) => err.name);
  await eventually(() => t.server.waiters.count === 1, 10_000, 'the longer wait held');
  const { res, body, ms } = await held(t, `${q}&wait=1`, etag);
  assert.is(res.status, 304);
  assert.is(body, '');
  assert.ok(ms >= 950, `answered after ${Math.round(ms)} ms`);
  // Its own wait ran out: nothing was answered for all (the one of 60 s is still held).
  assert.is(t.server.waiters.count, 1);
  longer.abort();
  assert.is(await other, 'AbortError');
  assert.is(res.headers.get('etag'), await tagOf(t, q));
});

test('rows leaving the window: 200 with the new body, long before the wait runs out', async ({ t }) => {
  const q = 'country=zw';
  const etag = await tagOf(t, q);
  const answer = held(t, `${q}&wait=60`, etag);
  await eventually(() => t.server.waiters.count === 1, 10_000, 'the request held');
  await new Promise((r) => setTimeout(r, 300));
  t.clock.advance(1000);
  // A 304 would say that the wait ran out (60 s, past the test's bound): a 200 that the change answered it.
  const { res, body } = await answer;
  assert.is(res.status, 200);
  assert.is(body, await (await fetch(url(t, q))).text());
  assert.is.not(res.headers.get('etag'), etag);
});

test('a new snapshot renamed in: every held request gets the new body, from one production', async ({ t }) => {
  const q = 'get=json&time=99999';
  const etag = await tagOf(t, q);
  const answers = Array.from({ length: 20 }, () => held(t, `${q}&wait=60`, etag));
  await eventually(() => t.server.waiters.count === 20, 10_000, 'the requests held');
  const productions = t.server.bodies.productions;
  writeFileAtomic(t.snapshot, second);
  // Status 200 and the new body: answered by the swap, not by their wait running out.
  const got = await Promise.all(answers);
  const now = await (await fetch(url(t, q))).text();
  for (const g of got) {
    assert.is(g.res.status, 200);
    assert.is(g.res.headers.get('snapshot-generated-at'), String(TEST_NOW_S + 1));
    assert.is(g.body, now);
  }
  // One production for the 20, and one for the request made after them.
  assert.is(t.server.bodies.productions - productions, 2);
});

test('40 clients that give up mid-wait are dropped at once; the server serves on', async ({ t }) => {
  const q = 'time=99999&count=7';
  const etag = await tagOf(t, q);
  const controllers = Array.from({ length: 40 }, () => new AbortController());
  const answers = controllers.map((c) => held(t, `${q}&wait=60`, etag, c.signal).catch((err: Error) => err.name));
  await eventually(() => t.server.waiters.count === 40, 10_000, 'the requests held');
  for (const c of controllers) c.abort();
  assert.equal(new Set(await Promise.all(answers)), new Set(['AbortError']));
  await eventually(() => t.server.waiters.count === 0, 10_000, 'the held requests dropped');
  const res = await fetch(url(t, q));
  assert.is(res.status, 200);
  assert.is(res.headers.get('etag'), etag);
  await res.arrayBuffer();
});

test('wait without a matching If-None-Match answers at once: never held', async ({ t }) => {
  const before = t.server.waiters.heldTotal;
  const res = await fetch(url(t, 'count=3&wait=60'), { headers: { 'if-none-match': 'W/"nothing"' } });
  assert.is(res.status, 200);
  await res.arrayBuffer();
  assert.is(t.server.waiters.heldTotal, before);
});

test.run();

const shutdown = suite('wait at shutdown');

shutdown('SIGTERM answers held requests at once, and the process exits', async () => {
  const { ports: [port], children: [child], close } = await serveProcesses(1, 500, 73);
  try {
    const q = `http://127.0.0.1:${port}/api?key=k&time=99999&count=4`;
    const first = await fetch(q);
    await first.arrayBuffer();
    const answers = Array.from({ length: 5 }, () => fetch(`${q}&wait=60`, { headers: { 'if-none-match': first.headers.get('etag')! } }));
    await new Promise((r) => setTimeout(r, 500));
    child.proc.kill('SIGTERM');
    // Their waits are of 60 s, past the test's bound: answered by the shutdown.
    const statuses = await Promise.all(answers.map((a) => a.then((r) => r.status)));
    assert.equal(statuses, [304, 304, 304, 304, 304]);
    assert.is(await exitWithin(child, 15_000), 0);
  } finally {
    await close();
  }
});

shutdown.run();
