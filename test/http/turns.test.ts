import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Turns } from '../../src/http/turns.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { TEST_KEY, TEST_NOW_S, eventually, serverSuite } from '../helpers/server.js';

/**
 * Requests whose selection scans much of the store take a turn of the event
 * loop each (src/http/turns.ts): what arrives meanwhile is answered between
 * two of them, and every answer is still the reference's.
 */
const unit = suite('turns');

unit('pieces run one per turn, in order of arrival; one taken back never runs', async () => {
  const turns = new Turns();
  const seen: string[] = [];
  turns.enqueue(() => {
    seen.push('a');
    // Work queued by a piece runs before the next piece: the next one waits a turn.
    setImmediate(() => seen.push('between'));
  });
  const takeBack = turns.enqueue(() => seen.push('b'));
  turns.enqueue(() => seen.push('c'));
  assert.is(turns.waiting, 3);
  takeBack();
  assert.is(turns.waiting, 2);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(seen, ['a', 'between', 'c']);
  assert.is(turns.ran, 2);
  assert.is(turns.waiting, 0);
});

unit.run();

const RECORDS = 70_000;
const records = generateRecords({ records: RECORDS, seed: 77, now: TEST_NOW_S });
const file = encodeSnapshot(records, TEST_NOW_S);
const engine = NaiveEngine.fromFile(file);
// Turns are taken within one serving thread: one thread.
const test = serverSuite('requests that scan much of the store', () => ({ snapshot: file, options: { threads: 1 } }));

test('distinct large queries each take a turn, small ones do not, and every answer is the reference\'s', async ({ t }) => {
  const big = ['get=json&time=99999&works=10', 'time=99999&type=http,socks5', 'get=json&time=99999&sort=ping&pretty=0', 'get=stats&time=99999', 'time=99999&anon=elite&works=20', 'get=json&time=99999&country=US&cm=except&fields=ip,works'];
  const small = ['count=10', 'type=http&count=100&get=json', 'time=60'];
  const before = t.server.turns.ran;
  const queries = [...big, ...small, ...big.slice(0, 2)];
  const answers = await Promise.all(queries.map(async (q) => {
    const res = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`);
    return { q, status: res.status, body: await res.text() };
  }));
  for (const a of answers) {
    assert.is(a.status, 200, `?${a.q}`);
    assert.is(a.body, engine.answer(`key=x&${a.q}`, t.clock.nowMs()).body, `?${a.q}`);
  }
  const ran = t.server.turns.ran - before;
  // Each distinct large query once; its repeats may have come after its tag was known.
  assert.ok(ran >= big.length && ran <= big.length + 2, `${ran} turns for ${big.length} distinct large queries`);
  // Asked again in the same second, on the same snapshot: remembered, no turn.
  const again = t.server.turns.ran;
  for (const q of big.slice(0, 3)) assert.is((await t.api(q)).status, 200);
  assert.is(t.server.turns.ran, again);
  const metrics = await (await t.get('/metrics')).text();
  assert.match(metrics, new RegExp(`^proxylist_request_turns_total ${t.server.turns.ran}$`, 'm'));
});

test('a large query asked with If-None-Match, with wait, and as HEAD: the same answers after its turn as without one', async ({ t }) => {
  const q = 'get=json&time=99999&works=33';
  const first = await t.api(q);
  const etag = first.headers.get('etag')!;
  const body = await first.text();
  assert.is(body, engine.answer(`key=x&${q}`, t.clock.nowMs()).body);
  // A new snapshot of other records: nothing is remembered for the query, which takes a turn again.
  const ok = t.server.feed.reloadsOk;
  writeFileAtomic(t.snapshot, encodeSnapshot(generateRecords({ records: RECORDS, seed: 78, now: TEST_NOW_S }), TEST_NOW_S + 1));
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 20_000, 'the next snapshot');
  const before = t.server.turns.ran;
  const changed = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { headers: { 'if-none-match': etag } });
  assert.is(changed.status, 200, 'the list changed: a 200');
  const etag2 = changed.headers.get('etag')!;
  assert.is.not(etag2, etag);
  await changed.arrayBuffer();
  assert.is(t.server.turns.ran, before + 1);
  const same = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { headers: { 'if-none-match': etag2 } });
  assert.is(same.status, 304);
  const head = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { method: 'HEAD' });
  assert.is(head.status, 200);
  assert.is(head.headers.get('etag'), etag2);
  // Held with wait until the list changes: answered at the next snapshot with the new list.
  const held = fetch(`${t.base}/api?key=${TEST_KEY}&${q}&wait=30`, { headers: { 'if-none-match': etag2 } });
  await eventually(() => t.server.waiters.count === 1, 10_000, 'the request held');
  writeFileAtomic(t.snapshot, file);
  const res = await held;
  assert.is(res.status, 200);
  assert.is(await res.text(), engine.answer(`key=x&${q}`, t.clock.nowMs()).body);
});

test.run();
