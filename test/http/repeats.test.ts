import { writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { metricValue } from '../helpers/http-read.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, eventually, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A repeated answer (docs/design.md, A repeated answer): a request identical
 * to one answered in this second, on this snapshot, in the same coding,
 * whichever key asked and whatever parameters the service ignores it
 * carried, gets the bytes the first answer made, after the key's check and
 * the limiter, with its own RateLimit fields. Whatever could change the answer sends it down the whole
 * path again, and the answer is then the reference's. One thread: what one
 * thread remembers is what is counted.
 */
const records = generateRecords({ records: 400, seed: 41, now: TEST_NOW_S });
const first = encodeSnapshot(records, TEST_NOW_S);
const LIMITED = 'limited-key';
const keys = (revoked = false) => ({
  keys: [{ key: TEST_KEY, name: 'test', limits: UNLIMITED, disabled: revoked }, { key: LIMITED, name: 'limited', limits: { per_window: 100, daily: 1000 } }],
});

const test = suite<{ t: TestServer }>('repeated answers');
test.before.each(async (ctx) => {
  ctx.t = await startTestServer({ snapshot: first, keys: keys(), options: { threads: 1 } });
});
test.after.each((ctx) => ctx.t.close());

const repeated = async (t: TestServer): Promise<number> => metricValue(await (await t.get('/metrics')).text(), 'proxylist_repeated_answers_total');
/** Status, headers but Date, and body: what two answers must share. */
const shape = (r: RawResponse): string => JSON.stringify([r.status, r.lines.slice(1).filter((l) => !/^date:/i.test(l)), r.body.toString('latin1')]);

test('the same query again: the same status, header lines and bytes, from what the first answer kept', async ({ t }) => {
  const c = await RawConnection.open(t.server.port);
  try {
    for (const [query, headers] of [
      [`/api?key=${TEST_KEY}&type=socks5&count=20`, ''],
      [`/api?key=${TEST_KEY}&get=json&country=us,de`, ''],
      [`/api?key=${TEST_KEY}&get=stats`, ''],
      [`/api?key=${TEST_KEY}&get=json&time=99999`, 'Accept-Encoding: gzip\r\n'],
      [`/api?key=${TEST_KEY}&get=json&wrap=1&count=5`, ''],
    ] as const) {
      const before = await repeated(t);
      const a = await c.request(query, 'GET', 5000, headers);
      const b = await c.request(query, 'GET', 5000, headers);
      const h = await c.request(query, 'HEAD', 5000, headers);
      // A compressed body is remembered once the cache has it: after the first answer, which waited for the compression, and the second, which found it.
      assert.is(await repeated(t), before + (headers ? 1 : 2), `${query}: the second GET and the HEAD repeated`);
      assert.is(shape(b), shape(a), query);
      assert.is(h.headers.get('content-length'), a.headers.get('content-length'), `${query}: HEAD`);
      if (!headers) assert.is(a.body.toString(), new NaiveEngine({ proxies: records }).answer(query.slice(5), t.clock.nowMs()).body, query);
    }
  } finally {
    c.close();
  }
});

test('a matching If-None-Match gets the 304, any other goes the whole way', async ({ t }) => {
  const query = `/api?key=${TEST_KEY}&type=http&count=10`;
  const etag = (await t.get(query)).headers.get('etag')!;
  const before = await repeated(t);
  assert.is((await t.get(query, { headers: { 'if-none-match': etag } })).status, 304);
  assert.is(await repeated(t), before + 1);
  assert.is((await t.get(query, { headers: { 'if-none-match': `"x", ${etag}` } })).status, 304, 'a list that holds it: the whole way');
  assert.is((await t.get(query, { headers: { 'if-none-match': 'W/"other"' } })).status, 200);
  assert.is(await repeated(t), before + 1, 'neither of those repeated');
});

test('a new second, a new snapshot, another coding, another key entry: the whole way, and the right answer', async ({ t }) => {
  const q = 'type=socks4&count=30';
  const ask = async (headers: Record<string, string> = {}) => {
    const res = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { headers });
    return { status: res.status, body: await res.text(), encoding: res.headers.get('content-encoding') };
  };
  await ask();
  let before = await repeated(t);
  t.clock.advance(1000);
  assert.is((await ask()).body, new NaiveEngine({ proxies: records }).answer(q, t.clock.nowMs()).body, 'a second later');
  assert.is(await repeated(t), before, 'a second later: not repeated');
  // Another coding: fetch asks for gzip, br; the first asked for the same: a bare Accept-Encoding is another.
  await ask({ 'accept-encoding': 'identity' });
  assert.is(await repeated(t), before, 'another Accept-Encoding');
  const next = generateRecords({ records: 400, seed: 42, now: TEST_NOW_S });
  writeFileAtomic(t.snapshot, encodeSnapshot(next, TEST_NOW_S + 1));
  await eventually(() => t.server.feed.current!.meta.generatedAt === TEST_NOW_S + 1, 10_000, 'the new snapshot');
  before = await repeated(t);
  assert.is((await ask()).body, new NaiveEngine({ proxies: next }).answer(q, t.clock.nowMs()).body, 'the new snapshot');
  assert.is(await repeated(t), before, 'a new snapshot: not repeated');
  // The key revoked: refused at once, never the remembered bytes.
  await ask();
  writeFileSync(t.keys, JSON.stringify(keys(true)));
  await eventually(async () => (await ask()).status === 401, 10_000, 'the key revoked');
});

test('wait, since and sort=random are never repeated; every repeat is counted by the limiter', async ({ t }) => {
  const before = await repeated(t);
  for (let i = 0; i < 3; i++) await (await t.get(`/api?key=${TEST_KEY}&count=5&sort=random`)).arrayBuffer();
  const whole = await t.get(`/api?key=${TEST_KEY}&type=http`);
  const cursor = whole.headers.get('list-cursor')!;
  await whole.arrayBuffer();
  for (let i = 0; i < 3; i++) await (await t.get(`/api?key=${TEST_KEY}&type=http&since=${cursor}`)).arrayBuffer();
  assert.is(await repeated(t), before, 'none repeated');
  const usage = async () => ((await (await t.get('/usage')).json()) as { keys: Array<{ name: string; today: number }> }).keys.find((k) => k.name === 'test')!.today;
  const counted = await usage();
  for (let i = 0; i < 5; i++) await (await t.api('count=7')).arrayBuffer();
  assert.is(await repeated(t), before + 4);
  assert.is(await usage(), counted + 5, 'each repeat counted');
});

test('the answer is the query\'s, whoever asks: other keys and cache-busters repeat it, each with its own RateLimit fields', async ({ t }) => {
  const c = await RawConnection.open(t.server.port);
  try {
    const ask = (key: string, buster: string) => c.request(`/api?_=${buster}&key=${key}&type=http&count=12&nocache=${buster}`, 'GET', 5000, '');
    const a = await ask(LIMITED, '1');
    const before = await repeated(t);
    const b = await ask(TEST_KEY, '2');
    const d = await ask(LIMITED, '3');
    assert.is(await repeated(t), before + 2, 'the unlimited key and the limited one again, with new cache-busters: both repeated');
    const withoutRate = (r: RawResponse) => JSON.stringify([r.status, r.lines.slice(1).filter((l) => !/^(date|ratelimit(-policy)?):/i.test(l)), r.body.toString('latin1')]);
    assert.is(withoutRate(b), withoutRate(a));
    assert.is(withoutRate(d), withoutRate(a));
    assert.is(a.headers.get('ratelimit-policy'), '"window";q=100;w=5, "day";q=1000;w=86400');
    assert.match(a.headers.get('ratelimit')!, /^"window";r=99;t=5, "day";r=999;t=\d+$/);
    assert.match(d.headers.get('ratelimit')!, /^"window";r=98;t=5, "day";r=998;t=\d+$/, 'the key\'s own count');
    assert.is(b.headers.get('ratelimit'), undefined, 'a key without limits: no fields');
    assert.is(a.body.toString(), new NaiveEngine({ proxies: records }).answer('type=http&count=12', t.clock.nowMs()).body);
    // A refusal is the key's: the limited key past its window gets its 429, never the remembered bytes.
    for (let i = 0; i < 98; i++) await ask(LIMITED, String(10 + i));
    const refused = await ask(LIMITED, 'x');
    assert.is(refused.status, 429);
    assert.match(refused.headers.get('ratelimit')!, /^"window";r=0;t=\d, "day";r=900;t=\d+$/);
  } finally {
    c.close();
  }
});

test.run();

const cacheOff = suite<{ t: TestServer }>('repeated answers without the response cache');
cacheOff.before(async (ctx) => {
  ctx.t = await startTestServer({ snapshot: first, keys: keys(), options: { threads: 1, cacheBytes: 0 } });
});
cacheOff.after((ctx) => ctx.t?.close());

cacheOff('with the cache off nothing is kept, so nothing is repeated', async ({ t }) => {
  for (let i = 0; i < 3; i++) await (await t.api('count=9')).arrayBuffer();
  assert.is(await repeated(t), 0);
});

cacheOff.run();
