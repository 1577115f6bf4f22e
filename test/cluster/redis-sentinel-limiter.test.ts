import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/core/clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { freePort } from '../helpers/cli.js';
import { RedisSentinels, SENTINEL_NAME } from '../helpers/redis-sentinel.js';
import { eventually, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The limiter behind Sentinels (docs/several-instances.md): a real primary,
 * its replica and three Sentinels; three instances given the Sentinels'
 * URL. Limits exact across instances; a failover, asked for or after the
 * primary is killed, followed within 2 s of the Sentinels' switch; the
 * requests past a limit across a failover counted.
 */
const now = Math.floor(Date.now() / 1000);
const snapshot = encodeSnapshot(generateRecords({ records: 300, seed: 93, now }), now);
const windowKeys = Array.from({ length: 3 }, (_, i) => `sentinel-window-${i}`);
/** Keys hammered through a failover: a daily limit, which no window resets meanwhile. */
const DAILY = 40;
const dailyKeys = Array.from({ length: 10 }, (_, i) => `sentinel-daily-${i}`);
/** A limited key (so asked of Redis) that its limit never refuses. */
const PROBE = 'sentinel-probe';
const KEYS = {
  keys: [
    ...windowKeys.map((key) => ({ key, limits: { per_window: 2, window_s: 5, daily: null, subnets: null } })),
    ...dailyKeys.map((key) => ({ key, limits: { per_window: null, daily: DAILY, subnets: null } })),
    { key: PROBE, limits: { per_window: null, daily: 1_000_000, subnets: null } },
  ],
};

interface Ctx { redis: RedisSentinels; servers: TestServer[] }
const test = suite<Ctx>('the Redis limiter behind Sentinels');
test.before(async (ctx) => {
  ctx.redis = await RedisSentinels.start();
  ctx.servers = await Promise.all([0, 1, 2].map(() => startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { limiter: ctx.redis.url } })));
  await eventually(async () => (await Promise.all(ctx.servers.map((t) => t.server.limiterUp()))).every(Boolean), 10_000, 'the instances on the primary, every thread');
});
test.after(async (ctx) => {
  await Promise.all((ctx.servers ?? []).map((t) => t.close()));
  await ctx.redis.close();
});

const ask = async (t: TestServer, key: string) => (await fetch(`${t.base}/api?key=${key}&count=1`)).status;

/** Waits until the Sentinels name a primary other than `port`: when they did, in performance.now() ms. */
async function switchedFrom(redis: RedisSentinels, port: number): Promise<number> {
  await eventually(() => redis.primaryPort() !== port, 20_000, 'the Sentinels switch the primary');
  return performance.now();
}

/** Until every instance is connected to the primary on `port` and admits a request of a limited key there: when, in performance.now() ms. */
async function followed(servers: TestServer[], port: number): Promise<number> {
  const done = new Set<number>();
  await eventually(async () => {
    for (let i = 0; i < servers.length; i++) {
      const redis = servers[i].server.redis!;
      if (!done.has(i) && redis.up && redis.primary === `127.0.0.1:${port}` && (await ask(servers[i], PROBE)) === 200) done.add(i);
    }
    return done.size === servers.length;
  }, 20_000, 'every instance on the new primary');
  return performance.now();
}

test('a list of seeds without a Cluster: the first primary among them is used, past a dead port and a replica', async ({ redis }) => {
  const primary = redis.primaryPort();
  const replica = redis.servers.find((r) => r.port !== primary)!.port;
  const dead = await freePort();
  const t = await startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { limiter: [dead, replica, primary].map((p) => `redis://127.0.0.1:${p}`).join(',') } });
  try {
    await eventually(() => t.server.redis!.up, 10_000, 'the limiter on the primary');
    assert.is(t.server.redis!.mode, 'single');
    assert.is(t.server.redis!.primary, `127.0.0.1:${primary}`);
    // Every serving thread walks the seeds on its own connection: a request may reach one that is still on its way.
    await eventually(async () => (await ask(t, PROBE)) === 200, 10_000, 'an answer through the primary');
  } finally {
    await t.close();
  }
});

test('/health says sentinel; 2 per 5 s exact across instances', async ({ redis, servers }) => {
  const health = (await (await servers[0].get('/health')).json()) as { limiter: { mode: string; nodes: number; up: boolean } };
  assert.equal(health.limiter, { ...health.limiter, mode: 'sentinel', nodes: 1, up: true });
  for (const key of windowKeys) {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await ask(servers[i % 3], key));
    assert.equal(statuses, [200, 200, 429, 429], key);
  }
  // The count is on the primary the Sentinels name, and nowhere written but there.
  assert.match(redis.cli(redis.primaryPort(), 'ROLE'), /^master/);
});

test('a failover asked of the Sentinels is followed; the old primary is not written to', async ({ redis, servers }) => {
  const old = redis.primaryPort();
  const switchesBefore = servers[0].server.redis!.switches;
  redis.cli(redis.sentinels[0].port, 'SENTINEL', 'FAILOVER', SENTINEL_NAME);
  const switchedAt = await switchedFrom(redis, old);
  const followMs = (await followed(servers, redis.primaryPort())) - switchedAt;
  // The demoted primary syncs from the new one; the instances write only to the new one.
  await eventually(() => /^slave/.test(redis.cli(old, 'ROLE')), 15_000, 'the old primary demoted');
  assert.ok(servers.every((t) => t.server.redis!.switches > switchesBefore), 'every instance moved');
  const metrics = await (await servers[0].get('/metrics')).text();
  assert.match(metrics, /proxylist_limiter_switches_total [1-9]/);
  console.log(`      sentinel: a requested failover followed ${Math.round(followMs)} ms after the switch`);
});

test('the primary killed while keys are hammered: followed; requests past a limit counted', async ({ redis, servers }) => {
  const old = redis.primaryPort();
  await redis.inSync(old, redis.servers.find((r) => r.port !== old)!.port);
  const admitted = new Map<string, number>(dailyKeys.map((k) => [k, 0]));
  let stop = false;
  let killedAt = 0;
  // Eight clients ask round the keys over the three instances until told to stop.
  const clients = Array.from({ length: 8 }, async (_, c) => {
    for (let i = c; !stop; i += 8) {
      const key = dailyKeys[i % dailyKeys.length];
      const status = await ask(servers[i % 3], key);
      if (status === 200) admitted.set(key, admitted.get(key)! + 1);
      if (status === 503) await new Promise((r) => setTimeout(r, 20));
    }
  });
  // The kill comes when about half of each key's day is used.
  await eventually(() => [...admitted.values()].reduce((a, b) => a + b, 0) >= (dailyKeys.length * DAILY) / 2, 20_000, 'half of the day used');
  // The claim is for a replica that streams when the primary dies: on a loaded machine its link may have dropped meanwhile (it then resyncs in full, after repl-diskless-sync-delay).
  await redis.inSync(old, redis.servers.find((r) => r.port !== old)!.port);
  killedAt = performance.now();
  await redis.server(old).stop('SIGKILL');
  const switchedAt = await switchedFrom(redis, old);
  const followMs = (await followed(servers, redis.primaryPort())) - switchedAt;
  // Until every key is refused for its day on every instance.
  await eventually(async () => {
    for (const key of dailyKeys) for (const t of servers) if ((await ask(t, key)) !== 429) return false;
    return true;
  }, 20_000, 'every key at its daily limit');
  stop = true;
  await Promise.all(clients);
  const over = [...admitted.values()].map((n) => n - DAILY);
  const total = over.reduce((a, b) => a + b, 0);
  console.log(`      sentinel: primary killed, switch ${Math.round(switchedAt - killedAt)} ms later, followed ${Math.round(followMs)} ms after the switch; requests past the daily limit of ${DAILY}: ${over.join(' ')} (total ${total} over ${dailyKeys.length} keys; below 0: accepted by Redis as it died, answered 503)`);
  assert.ok(over.every((n) => n <= 3), `at most a few requests past the limit: ${over.join(' ')}`);
});

test.run();
