import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { sha256Hex } from '../../src/access/keys.js';
import { keysOf } from '../../src/access/redis-function.js';
import { systemClock } from '../../src/core/clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { captureLog } from '../helpers/log.js';
import { assertUsageDocumented } from '../helpers/openapi.js';
import { RedisServer } from '../../support/redis.js';
import { UNLIMITED, eventually, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * One exact limiter shared by three instances through a real redis-server
 * (docs/several-instances.md). The instances run on the system clock: the limiter's times
 * come from Redis.
 */
const now = Math.floor(Date.now() / 1000);
const snapshot = encodeSnapshot(generateRecords({ records: 300, seed: 91, now }), now);
const KEYS = {
  keys: [
    { key: 'two-per-5', limits: { per_window: 2, window_s: 5, daily: null, subnets: null } },
    { key: 'five-per-3', limits: { per_window: 5, window_s: 3, daily: null, subnets: null } },
    { key: 'four-a-day', limits: { per_window: null, daily: 4, subnets: null } },
    { key: 'two-subnets', limits: { per_window: null, daily: null, subnets: 2 } },
    { key: 'three-per-60', limits: { per_window: 3, window_s: 60, daily: null, subnets: null } },
    { key: 'all-three', limits: { per_window: 2, window_s: 5, daily: 100, subnets: 10 } },
    { key: 'free', limits: UNLIMITED },
    { key: 'wide-window', limits: { per_window: 100_000, window_s: 1, daily: null, subnets: null } },
    { key: 'usage-counted', limits: { per_window: null, daily: 100, subnets: 5 } },
  ],
};

interface Ctx { redis: RedisServer; servers: TestServer[] }
const test = suite<Ctx>('the Redis limiter, three instances');
test.before(async (ctx) => {
  ctx.redis = await RedisServer.start();
  ctx.servers = await Promise.all([0, 1, 2].map(() => startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { limiter: ctx.redis.url, trustProxy: ['127.0.0.1'] } })));
  await eventually(async () => (await Promise.all(ctx.servers.map((t) => t.server.limiterUp()))).every(Boolean), 10_000, 'the instances connected to Redis, every thread');
});
test.after(async (ctx) => {
  await Promise.all((ctx.servers ?? []).map((t) => t.close()));
  await ctx.redis.close();
});

const ask = async (t: TestServer, key: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${t.base}/api?key=${key}&count=1`, { headers });
  return { status: res.status, body: await res.text(), retryAfter: res.headers.get('retry-after'), rate: res.headers.get('ratelimit') };
};

test('2 per 5 s hammered round-robin for 12 s: never more than 2 accepted in any 5 s', async ({ servers }) => {
  const accepted: number[] = [];
  const started = performance.now();
  for (let i = 0; performance.now() - started < 12_000; i++) {
    const sent = performance.now();
    const { status } = await ask(servers[i % 3], 'two-per-5');
    if (status === 200) accepted.push(sent);
    else assert.is(status, 429);
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(accepted.length >= 4, `${accepted.length} accepted`);
  // Any 3 accepted requests span at least the window (less what a round trip may shift it).
  for (let i = 0; i + 2 < accepted.length; i++) assert.ok(accepted[i + 2] - accepted[i] >= 4900, `3 accepted within ${Math.round(accepted[i + 2] - accepted[i])} ms`);
});

test('60 concurrent requests to 5 per 3 s across the instances: exactly 5 accepted', async ({ servers }) => {
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) => ask(servers[i % 3], 'five-per-3')));
  assert.is(results.filter((r) => r.status === 200).length, 5);
  assert.is(results.filter((r) => r.status === 429).length, 55);
  const refused = results.find((r) => r.status === 429)!;
  assert.match(refused.body, 'Error: Request rate limit exceeded');
  assert.ok(Number(refused.retryAfter) >= 1 && Number(refused.retryAfter) <= 3, `Retry-After ${refused.retryAfter}`);
});

test('the daily limit and the subnet limit hold across instances', async ({ servers }) => {
  const daily = [];
  for (let i = 0; i < 6; i++) daily.push((await ask(servers[i % 3], 'four-a-day')).status);
  assert.equal(daily, [200, 200, 200, 200, 429, 429]);
  assert.match((await ask(servers[0], 'four-a-day')).body, 'Error: Daily request limit exceeded');
  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  assert.is((await ask(servers[0], 'two-subnets', from('10.1.0.1'))).status, 200);
  assert.is((await ask(servers[1], 'two-subnets', from('10.2.0.1'))).status, 200);
  const third = await ask(servers[2], 'two-subnets', from('10.3.0.1'));
  assert.is(third.status, 403);
  assert.match(third.body, 'Error: Subnet limit exceeded');
  assert.is((await ask(servers[0], 'two-subnets', from('10.3.9.9'))).status, 403);
  assert.is((await ask(servers[2], 'two-subnets', from('10.1.200.7'))).status, 200, 'a subnet already seen passes');
});

test('a refusal is remembered: a key hammered past its limit costs Redis nothing until its retry time, past one call a thread', async ({ servers, redis }) => {
  const t = servers[0];
  for (let i = 0; i < 3; i++) assert.is((await ask(t, 'three-per-60')).status, 200);
  assert.is((await ask(t, 'three-per-60')).status, 429);
  const stats = createClient({ url: redis.url });
  await stats.connect();
  try {
    const calls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await stats.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    for (let i = 0; i < 50; i++) assert.is((await ask(t, 'three-per-60')).status, 429);
    // Each serving thread remembers the refusals it was told of: another thread asks Redis once, then remembers too.
    const more = (await calls()) - before;
    assert.ok(more <= t.server.threads - 1, `${more} FCALLs for the 50 refused requests, over ${t.server.threads} threads`);
  } finally {
    await stats.close();
  }
});

test('a wide window holds only the stamps of its length: an admission never reads the stamps that aged out', async ({ servers, redis }) => {
  for (let i = 0; i < 30; i++) assert.is((await ask(servers[i % 3], 'wide-window')).status, 200);
  const client = createClient({ url: redis.url });
  await client.connect();
  try {
    const [w] = keysOf(sha256Hex('wide-window'));
    assert.is(await client.lLen(w), 30);
    await new Promise((r) => setTimeout(r, 1100));
    assert.is((await ask(servers[0], 'wide-window')).status, 200);
    assert.is(await client.lLen(w), 1, 'the 30 stamps older than 1 s dropped with the acceptance');
  } finally {
    await client.close();
  }
});

test('every key the function writes expires by itself: the window after its length, the day and its subnets a minute after the day', async ({ servers, redis }) => {
  for (const t of servers.slice(0, 2)) assert.is((await ask(t, 'all-three')).status, 200);
  const client = createClient({ url: redis.url });
  await client.connect();
  try {
    const [s, us] = await client.time();
    const nowMs = Number(s) * 1000 + Number(us) / 1000;
    const DAY_MS = 86_400_000;
    const OFFSET_MS = 7_200_000;
    const toMidnightMs = DAY_MS - ((nowMs + OFFSET_MS) % DAY_MS);
    const [w, d, sub] = keysOf(sha256Hex('all-three'));
    const windowTtl = await client.pTTL(w);
    assert.ok(windowTtl > 0 && windowTtl <= 6000, `the window's list expires in ${windowTtl} ms`);
    for (const key of [d, sub]) {
      const ttl = await client.pTTL(key);
      assert.ok(ttl > 60_000 - 2000 && ttl <= toMidnightMs + 60_000 + 1000, `${key} expires in ${ttl} ms, ${Math.round(toMidnightMs / 1000)} s before midnight`);
    }
  } finally {
    await client.close();
  }
});

test('/usage on any instance holds the counts of every instance, read from Redis', async ({ servers }) => {
  for (let i = 0; i < 5; i++) assert.is((await ask(servers[i % 2], 'usage-counted')).status, 200);
  await ask(servers[0], 'free');
  const res = await servers[2].get('/usage');
  assert.is(res.status, 200);
  const usage = (await res.json()) as { limiter: string; keys: Array<{ id: string; today: number | null; subnets: number | null }> };
  assertUsageDocumented(usage);
  assert.is(usage.limiter, 'redis');
  const row = (key: string) => usage.keys.find((k) => k.id === sha256Hex(key).slice(0, 8))!;
  assert.equal({ ...row('usage-counted') }, { ...row('usage-counted'), today: 5, subnets: 1 });
  assert.equal({ ...row('free') }, { ...row('free'), today: null, subnets: null }, 'a key without limits is not counted in Redis');
  assert.is(usage.keys.length, KEYS.keys.length);
});

test('a key without limits never reaches Redis', async ({ servers, redis }) => {
  const stats = createClient({ url: redis.url });
  await stats.connect();
  const calls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await stats.info('commandstats'))?.[1] ?? 0);
  const before = await calls();
  for (let i = 0; i < 20; i++) assert.is((await ask(servers[i % 3], 'free')).status, 200);
  assert.is(await calls(), before);
  await stats.close();
});

test('the function flushed from Redis is loaded again, and limits go on', async ({ servers, redis }) => {
  const admin = createClient({ url: redis.url });
  await admin.connect();
  await admin.sendCommand(['FUNCTION', 'FLUSH']);
  await admin.close();
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await ask(servers[i], 'five-per-3')).status);
  // The key's window from the earlier test may still be full: either way an answer, never a 503 or 500.
  for (const s of statuses) assert.ok(s === 200 || s === 429, `status ${s}`);
  await new Promise((r) => setTimeout(r, 3100));
  assert.is((await ask(servers[1], 'five-per-3')).status, 200);
});

test.run();

const strictLog = captureLog();
const LONG_TIMEOUT_MS = 60_000;
const noWait = (ms: number, what: string) => assert.ok(ms < LONG_TIMEOUT_MS / 6, `${what} after ${Math.round(ms)} ms: it waited for the limiter's timeout`);
const down = suite<{ redis: RedisServer; strict: TestServer; fallback: TestServer }>('Redis down, and back');
down.before(async (ctx) => {
  ctx.redis = await RedisServer.start();
  // A timeout far past the test's bounds: an answer within them was not one that waited for it.
  const options = { limiter: ctx.redis.url, limiterTimeoutMs: LONG_TIMEOUT_MS };
  ctx.strict = await startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { ...options, log: strictLog.log } });
  ctx.fallback = await startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { ...options, limiterFallback: 'memory' as const } });
  await eventually(async () => (await ctx.strict.server.limiterUp()) && (await ctx.fallback.server.limiterUp()), 10_000, 'connected, every thread');
});
down.after(async (ctx) => {
  await ctx.strict.close();
  await ctx.fallback.close();
  await ctx.redis.close();
});

down('killed: 503 at once for limited keys, unlimited keys served, the metrics and /health say so; with the fallback, limits per instance', async ({ redis, strict, fallback }) => {
  assert.is((await ask(strict, 'two-per-5')).status, 200);
  await redis.stop('SIGKILL');
  const first = performance.now();
  const refused = await ask(strict, 'five-per-3');
  const firstMs = performance.now() - first;
  assert.is(refused.status, 503);
  assert.is(refused.body, 'Error: Usage limits are unavailable; retry shortly');
  assert.is(refused.retryAfter, '1');
  noWait(firstMs, 'the first 503');
  await eventually(() => !strict.server.redis!.up, 10_000, 'Redis known down');
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    assert.is((await ask(strict, 'five-per-3')).status, 503);
    noWait(performance.now() - t0, 'a 503 with Redis known down');
  }
  assert.is((await ask(strict, 'free')).status, 200);
  const metrics = await (await strict.get('/metrics')).text();
  assert.match(metrics, /^proxylist_limiter_up 0$/m);
  const health = await (await strict.get('/health')).json() as { status: string; limiter: { kind: string; up: boolean } };
  assert.is(health.status, 'ok');
  assert.equal([health.limiter.kind, health.limiter.up], ['redis', false]);

  await eventually(() => !fallback.server.redis!.up, 10_000, 'the fallback instance knows');
  const alone = [];
  for (let i = 0; i < 3; i++) alone.push((await ask(fallback, 'two-per-5')).status);
  assert.equal(alone, [200, 200, 429]);
  assert.match(await (await fallback.get('/metrics')).text(), /^proxylist_limiter_fallback_total [1-9]/m);
});

down('restarted: limits work again without restarting the instances, the function loaded again', async ({ redis, strict }) => {
  await redis.run();
  await eventually(() => strict.server.limiterUp(), 10_000, 'reconnected, every thread');
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await ask(strict, 'two-per-5')).status);
  assert.equal(statuses, [200, 200, 429]);
  assert.match(await (await strict.get('/metrics')).text(), /^proxylist_limiter_up 1$/m);
  // The log says when Redis went down and when it came back: up at start, down, up again.
  assert.is(strictLog.events('limiter_down').length, 1);
  assert.is(strictLog.events('limiter_up').length, 2);
});

down.run();
