import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { serveProcesses } from '../helpers/cli.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, startTestServer, type TestServer } from '../helpers/server.js';

/** ETag, If-None-Match and 304 (docs/api.md, ETag and wait). */
const records = generateRecords({ records: 3000, seed: 61, now: TEST_NOW_S });
// The rows of a country of their own leave the default window one per second, from 1 s on.
const leaving = records.slice(0, 30).map((r, i) => ({ ...r, country: 'ZW', ip: `198.51.100.${i + 1}`, checked_at: TEST_NOW_S - 600 + i }));
const snapshot = encodeSnapshot([...records.filter((r) => r.country.toUpperCase() !== 'ZW'), ...leaving], TEST_NOW_S);
const TAG = /^W\/"[0-9A-Za-z_-]{1,64}"$/;

const test = suite<{ t: TestServer }>('conditional requests');
test.before(async (ctx) => {
  ctx.t = await startTestServer({
    snapshot,
    keys: { keys: [{ key: TEST_KEY, limits: UNLIMITED }, { key: 'two-a-day', limits: { per_window: null, daily: 2, subnets: null } }] },
  });
});
test.after((ctx) => ctx.t?.close());

const get = (t: TestServer, q: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { method, headers: { 'accept-encoding': 'identity', ...headers } });
const tagOf = async (t: TestServer, q: string): Promise<string> => {
  const res = await get(t, q);
  await res.arrayBuffer();
  return res.headers.get('etag')!;
};

test('every 200 has a weak ETag and Snapshot-Generated-At; one body, one tag, whatever the coding; a second later the same', async ({ t }) => {
  for (const q of ['count=5', 'get=json&wrap=1&count=5', 'get=stats&time=99999', 'sort=ping&count=5&time=99999', 'get=json&format=object&time=99999']) {
    const res = await get(t, q);
    const body = await res.text();
    const etag = res.headers.get('etag')!;
    assert.match(etag, TAG, q);
    assert.is(res.headers.get('snapshot-generated-at'), String(TEST_NOW_S));
    const gz = await get(t, q, { 'accept-encoding': 'gzip' });
    assert.is(gz.headers.get('etag'), etag, `gzip ${q}`);
    await gz.arrayBuffer();
    t.clock.advance(1000);
    const later = await get(t, q);
    const laterBody = await later.text();
    // The envelope's timestamp is the only part that may differ.
    const strip = (s: string) => s.replace(/"timestamp": ?"[^"]*"/, '');
    assert.is(strip(laterBody), strip(body), `the same body of ${q}`);
    assert.is(later.headers.get('etag'), etag, `the same tag of ${q}`);
  }
});

test('a different query, count or output gives a different tag', async ({ t }) => {
  const tags = await Promise.all(['count=5', 'count=6', 'get=json&count=5', 'count=5&type_prefix=1', 'sort=works&count=5', 'get=stats&type=http'].map((q) => tagOf(t, q)));
  assert.is(new Set(tags).size, tags.length, tags.join(' '));
});

test('rows leaving the window: the full query\'s tag changes, count=3 of the freshest keeps its tag', async ({ t }) => {
  const full = await tagOf(t, 'country=zw');
  const freshest = await tagOf(t, 'country=zw&count=3');
  const fullBody = await (await get(t, 'country=zw')).text();
  const sorted = 'country=zw&count=3&sort=ping';
  const sortedBefore = { tag: await tagOf(t, sorted), body: await (await get(t, sorted)).text() };
  t.clock.advance(2000);
  assert.is.not(await (await get(t, 'country=zw')).text(), fullBody, 'a row left');
  assert.is.not(await tagOf(t, 'country=zw'), full);
  assert.is(await tagOf(t, 'country=zw&count=3'), freshest);
  // Sorted by ping, the first three change only if one of them left: the tag follows the body.
  for (let s = 0; s < 12; s++) {
    const tag = await tagOf(t, sorted);
    const body = await (await get(t, sorted)).text();
    assert.is(tag === sortedBefore.tag, body === sortedBefore.body, `at +${s} s`);
    t.clock.advance(1000);
  }
});

test('If-None-Match: exact, without W/, in a list, and * answer 304 with the 200\'s headers; another tag answers 200', async ({ t }) => {
  const q = 'get=json&count=4';
  const ok = await get(t, q);
  await ok.arrayBuffer();
  const etag = ok.headers.get('etag')!;
  const opaque = etag.slice(2);
  for (const inm of [etag, opaque, `W/"other", ${etag}`, `"a","b" , ${opaque}`, '*']) {
    for (const method of ['GET', 'HEAD']) {
      const res = await get(t, q, { 'if-none-match': inm }, method);
      assert.is(res.status, 304, `${method} If-None-Match: ${inm}`);
      assert.is(await res.text(), '');
      for (const h of ['etag', 'cache-control', 'vary', 'snapshot-generated-at', 'content-type']) assert.is(res.headers.get(h), ok.headers.get(h), h);
      assert.is(res.headers.get('content-length'), null);
    }
  }
  for (const inm of ['W/"other"', '"other", W/"x"', 'garbage', etag.slice(0, -2) + '"']) {
    const res = await get(t, q, { 'if-none-match': inm });
    assert.is(res.status, 200, `If-None-Match: ${inm}`);
    assert.is(await res.text(), await (await get(t, q)).text());
  }
});

test('sort=random: each answer has a tag of its own, which never answers 304; * does', async ({ t }) => {
  const a = await tagOf(t, 'sort=random&count=3');
  const b = await tagOf(t, 'sort=random&count=3');
  assert.match(a, TAG);
  assert.is.not(a, b);
  assert.is((await get(t, 'sort=random&count=3', { 'if-none-match': a })).status, 200);
  assert.is((await get(t, 'sort=random&count=3', { 'if-none-match': '*' })).status, 304);
});

test('a 304 costs quota like any request', async ({ t }) => {
  const url = `${t.base}/api?key=two-a-day&count=2`;
  const first = await fetch(url);
  await first.arrayBuffer();
  assert.is(first.status, 200);
  const second = await fetch(url, { headers: { 'if-none-match': first.headers.get('etag')! } });
  assert.is(second.status, 304);
  const third = await fetch(url, { headers: { 'if-none-match': first.headers.get('etag')! } });
  assert.is(third.status, 429);
  assert.match(await third.text(), 'Daily request limit exceeded');
});

test.run();

const processes = suite('two server processes on one snapshot');

processes('agree on every tag', async () => {
  const { ports, close } = await serveProcesses(2, 2000, 62);
  try {
    for (const q of ['time=99999', 'time=99999&count=10', 'get=json&time=99999&sort=ping&count=50', 'get=stats&time=99999&type=http', 'get=json&wrap=1&time=99999&works=50']) {
      const tags = await Promise.all(ports.map(async (port) => {
        const res = await fetch(`http://127.0.0.1:${port}/api?key=k&${q}`);
        await res.arrayBuffer();
        return res.headers.get('etag');
      }));
      assert.match(tags[0]!, TAG);
      assert.is(tags[1], tags[0], q);
    }
  } finally {
    await close();
  }
});

processes.run();
