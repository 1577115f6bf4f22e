import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../helpers/manual-clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { getFrom } from '../helpers/http-from.js';
import { TEST_NOW_S, eventually, startTestServer, type TestServer } from '../helpers/server.js';

const snapshot = encodeSnapshot(generateRecords({ records: 200, seed: 4, now: TEST_NOW_S }), TEST_NOW_S);
const keys = {
  keys: [
    { key: 'default' },
    { key: 'hammer' },
    { key: 'three-a-day', limits: { per_window: null, daily: 3 } },
    { key: 'subnets', limits: { per_window: null } },
    { key: 'one-subnet', limits: { per_window: null, subnets: 1 } },
    { key: 'free', limits: { per_window: null, daily: null, subnets: null } },
    { key: 'toggle', limits: { per_window: null, daily: 3 } },
  ],
};
/** 2026-11-28 23:59:30 in UTC+02:00. */
const LATE_EVENING_MS = Date.parse('2026-11-28T21:59:30Z');

const get = (t: TestServer, key: string, extra = '') => t.get(`/api?key=${key}&count=1${extra}`);

const test = suite<{ t: TestServer; clock: ManualClock }>('usage limits');
test.before.each(async (ctx) => {
  ctx.clock = new ManualClock(TEST_NOW_S * 1000, 1_000_000);
  ctx.t = await startTestServer({ snapshot, keys, clock: ctx.clock });
});
test.after.each((ctx) => ctx.t.close());

test('frequency: the 3rd request within 5 s gets 429 with Retry-After; refused ones do not count', async ({ t, clock }) => {
  assert.is((await get(t, 'default')).status, 200);
  clock.advance(1000);
  assert.is((await get(t, 'default')).status, 200);
  clock.advance(1500);
  const third = await get(t, 'default');
  assert.is(third.status, 429);
  assert.is(await third.text(), 'Error: Request rate limit exceeded: at most 2 requests per 5 s; retry in 3 s');
  assert.is(third.headers.get('retry-after'), '3');
  assert.is(third.headers.get('content-type'), 'text/plain; charset=utf-8');
  // Refusals while waiting do not extend the wait.
  for (let i = 0; i < 5; i++) assert.is((await get(t, 'default')).status, 429);
  clock.advance(2500); // exactly Retry-After after the refusal
  assert.is((await get(t, 'default')).status, 200);
  const next = await get(t, 'default');
  assert.is(next.status, 429);
  assert.is(next.headers.get('retry-after'), '1', 'the second request of the first pair leaves at 6 s');
  clock.advance(1000);
  assert.is((await get(t, 'default')).status, 200);
});

test('frequency: a hammering loop of 1,000 requests gets exactly 2 accepted per 5 s window', async ({ t, clock }) => {
  const accepted: number[] = [];
  const start = clock.monotonicMs();
  for (let i = 0; i < 1000; i++) {
    const res = await get(t, 'hammer');
    await res.arrayBuffer();
    if (res.status === 200) accepted.push(clock.monotonicMs() - start);
    else assert.is(res.status, 429);
    clock.advance(37);
  }
  // 37 s of traffic: pairs at the start of each 5 s window, 8 windows in all.
  assert.is(accepted.length, 16, `accepted at ${accepted.join(', ')}`);
  for (let i = 2; i < accepted.length; i++) assert.ok(accepted[i] - accepted[i - 2] >= 5000, `3 within 5 s at ${accepted[i]}`);
  for (let i = 2; i < accepted.length; i += 2) assert.ok(accepted[i] - accepted[i - 2] < 5000 + 37, 'no slot wasted');
});

test('daily: the 4th request of a daily-3 key gets 429 until midnight UTC+02:00', async ({ t, clock }) => {
  clock.set(LATE_EVENING_MS);
  for (let i = 0; i < 3; i++) assert.is((await get(t, 'three-a-day')).status, 200);
  const refused = await get(t, 'three-a-day');
  assert.is(refused.status, 429);
  assert.is(refused.headers.get('retry-after'), '30');
  assert.match(await refused.text(), /^Error: Daily request limit exceeded: at most 3 requests per day/);
  clock.advance(29_000);
  assert.is((await get(t, 'three-a-day')).status, 429);
  assert.is((await get(t, 'three-a-day')).headers.get('retry-after'), '1');
  clock.advance(1000);
  assert.is((await get(t, 'three-a-day')).status, 200, 'a new day');
});

test('subnets: requests from 11 distinct /16 source addresses; the 11th gets 403, the first 10 keep working, the next day resets', async ({ t, clock }) => {
  clock.set(LATE_EVENING_MS);
  const url = `${t.base}/api?key=subnets&count=1`;
  for (let n = 1; n <= 10; n++) assert.is((await getFrom(`127.${n}.0.1`, url)).status, 200, `subnet ${n}`);
  const eleventh = await getFrom('127.11.0.1', url);
  assert.is(eleventh.status, 403);
  assert.match(eleventh.body, /^Error: Subnet limit exceeded: .* 127\.11\.0\.0\/16/);
  assert.is((await getFrom('127.11.9.9', url)).status, 403, 'the same /16');
  for (let n = 1; n <= 10; n++) assert.is((await getFrom(`127.${n}.200.7`, url)).status, 200, `known subnet ${n}, other host`);
  clock.advance(30_000);
  assert.is((await getFrom('127.11.0.1', url)).status, 200, 'a new day');
});

/** Whether this machine has IPv6 on loopback (some containers have none). */
const ipv6Loopback = (): Promise<boolean> =>
  new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });

test('subnets on a dual-stack listener: an IPv4 peer counts as its /16, an IPv6 peer as its /32', async () => {
  if (!(await ipv6Loopback())) {
    console.log('  (no IPv6 on loopback here: the dual-stack case is not run)');
    return;
  }
  const clock = new ManualClock(TEST_NOW_S * 1000, 1_000_000);
  const t = await startTestServer({ snapshot, keys, clock, options: { host: '::' } });
  try {
    const url = (host: string) => `http://${host}:${t.server.port}/api?key=one-subnet&count=1`;
    assert.is((await getFrom('127.20.0.1', url('127.0.0.1'))).status, 200, 'the first subnet');
    assert.is((await getFrom('127.20.9.9', url('127.0.0.1'))).status, 200, 'the same /16');
    const v6 = await getFrom('::1', url('[::1]'));
    assert.is(v6.status, 403);
    assert.match(v6.body, /^Error: Subnet limit exceeded: .* 0:0::\/32/);
  } finally {
    await t.close();
  }
});

test('null limits mean unlimited, and such keys get no RateLimit fields', async ({ t }) => {
  for (let n = 1; n <= 60; n++) {
    const res = await getFrom(`127.${n}.0.1`, `${t.base}/api?key=free&count=1`);
    assert.is(res.status, 200);
    assert.is(res.headers['ratelimit'], undefined);
  }
});

test('RateLimit fields on keyed responses, accepted or not', async ({ t, clock }) => {
  clock.set(LATE_EVENING_MS);
  const first = await get(t, 'default');
  assert.is(first.headers.get('ratelimit-policy'), '"window";q=2;w=5, "day";q=34560;w=86400');
  assert.is(first.headers.get('ratelimit'), '"window";r=1;t=5, "day";r=34559;t=30');
  const bad = await get(t, 'default', '&type=bogus');
  assert.is(bad.status, 400);
  assert.is(bad.headers.get('ratelimit'), '"window";r=0;t=5, "day";r=34558;t=30', 'a 400 is counted');
  const refused = await get(t, 'default');
  assert.is(refused.status, 429);
  assert.is(refused.headers.get('ratelimit'), '"window";r=0;t=5, "day";r=34558;t=30', 'a refusal is not');
});

test('RateLimit t never exceeds the window, whatever fraction of a millisecond the monotonic clock reads', async () => {
  // 2092226.9665908932 + 5000 - 2092226.9665908932 is 5000.000000000466 in floating point: ceil would say 6 s.
  const clock = new ManualClock(TEST_NOW_S * 1000, 2092226.9665908932);
  const t = await startTestServer({ snapshot, keys, clock });
  try {
    const first = await get(t, 'default');
    assert.is(first.headers.get('ratelimit'), '"window";r=1;t=5, "day";r=34559;t=36000');
    const second = await get(t, 'default');
    assert.is(second.headers.get('ratelimit'), '"window";r=0;t=5, "day";r=34558;t=36000');
    const refused = await get(t, 'default');
    assert.is(refused.headers.get('retry-after'), '5');
  } finally {
    await t.close();
  }
});

test('a key disabled and enabled again keeps its day count', async ({ t }) => {
  for (let i = 0; i < 2; i++) assert.is((await get(t, 'toggle')).status, 200);
  const without = { keys: keys.keys.map((k) => (k.key === 'toggle' ? { ...k, disabled: true } : k)) };
  writeFileSync(t.keys, JSON.stringify(without));
  await eventually(async () => (await get(t, 'toggle')).status === 401, 10_000, 'disabled');
  writeFileSync(t.keys, JSON.stringify(keys));
  await eventually(async () => (await get(t, 'toggle')).status !== 401, 10_000, 'enabled');
  // The request that saw it enabled again was the 3rd of the day.
  assert.is((await get(t, 'toggle')).status, 429);
});

test.run();

const proxy = suite<{ t: TestServer }>('client address behind a proxy');
proxy.after.each((ctx) => ctx.t.close());

proxy('with --trust-proxy 127.0.0.1, X-Forwarded-For chooses the subnet', async (ctx) => {
  const t = (ctx.t = await startTestServer({ snapshot, keys, options: { trustProxy: ['127.0.0.1'] } }));
  const url = `${t.base}/api?key=one-subnet&count=1`;
  assert.is((await getFrom('127.0.0.1', url, { 'x-forwarded-for': '10.1.2.3' })).status, 200);
  assert.is((await getFrom('127.0.0.1', url, { 'x-forwarded-for': '192.0.2.1, 10.1.99.99, 127.0.0.1' })).status, 200, 'right-most untrusted: 10.1.99.99');
  assert.is((await getFrom('127.0.0.1', url, { 'x-forwarded-for': '10.2.0.1' })).status, 403);
  // An untrusted peer's header is ignored: 127.5.0.1 is its own (second) subnet.
  assert.is((await getFrom('127.5.0.1', url, { 'x-forwarded-for': '10.1.2.3' })).status, 403);
});

proxy('without --trust-proxy, X-Forwarded-For changes nothing', async (ctx) => {
  const t = (ctx.t = await startTestServer({ snapshot, keys }));
  const url = `${t.base}/api?key=one-subnet&count=1`;
  assert.is((await getFrom('127.0.0.1', url, { 'x-forwarded-for': '10.1.2.3' })).status, 200);
  assert.is((await getFrom('127.0.0.1', url, { 'x-forwarded-for': '10.2.0.1' })).status, 200);
  assert.is((await getFrom('127.0.0.2', url, { 'x-forwarded-for': '10.2.0.1' })).status, 200, '127.0.0.2 is in 127.0/16 too');
  assert.is((await getFrom('127.3.0.1', url)).status, 403);
});

proxy.run();
