import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { sha256Hex } from '../../src/access/keys.js';
import { keysOf } from '../../src/access/redis-function.js';
import { slotOf } from '../../src/access/redis-slot.js';
import { systemClock } from '../../src/core/clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { eventually, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The limiter on a real Redis Cluster (docs/several-instances.md): three
 * primaries with a replica each, three instances seeded with one node's
 * URL; limits exact whichever primary owns a key; a primary killed affects
 * only its slots and is followed once the cluster promotes its replica.
 */
const now = Math.floor(Date.now() / 1000);
const snapshot = encodeSnapshot(generateRecords({ records: 300, seed: 92, now }), now);
const names = Array.from({ length: 12 }, (_, i) => `cluster-key-${i}`);
/** Limited keys (so asked of Redis) that their limit never refuses. */
const probes = Array.from({ length: 12 }, (_, i) => `cluster-probe-${i}`);
const KEYS = {
  keys: [
    ...names.map((key) => ({ key, limits: { per_window: 2, window_s: 5, daily: null, subnets: null } })),
    ...probes.map((key) => ({ key, limits: { per_window: null, daily: 1_000_000, subnets: null } })),
  ],
};

interface Ctx { cluster: RedisCluster; servers: TestServer[] }
const test = suite<Ctx>('the Redis limiter on a Redis Cluster');
test.before(async (ctx) => {
  ctx.cluster = await RedisCluster.start();
  // The seed is a replica's URL: the instance finds the primaries by itself.
  const replica = ctx.cluster.nodes.find((n) => ctx.cluster.cli(n, 'ROLE').startsWith('slave'))!;
  ctx.servers = await Promise.all([0, 1, 2].map(() => startTestServer({ snapshot, keys: KEYS, clock: systemClock, options: { limiter: replica.url } })));
  await eventually(async () => ctx.servers.every((t) => t.server.redis!.mode === 'cluster') && (await Promise.all(ctx.servers.map((t) => t.server.limiterUp()))).every(Boolean), 10_000, 'the instances on the cluster, every thread');
});
test.after(async (ctx) => {
  await Promise.all((ctx.servers ?? []).map((t) => t.close()));
  await ctx.cluster?.close();
});

const ask = async (t: TestServer, key: string) => (await fetch(`${t.base}/api?key=${key}&count=1`)).status;
/** The port of the primary that owns the slot of an access key, from CLUSTER NODES of a live node. */
const ownerPort = (cluster: RedisCluster, key: string): number => {
  const slot = slotOf(keysOf(sha256Hex(key))[0]);
  const live = cluster.nodes.find((n) => cluster.cli(n, 'PING').startsWith('PONG'))!;
  for (const line of cluster.cli(live, 'CLUSTER', 'NODES').split('\n')) {
    const fields = line.split(' ');
    if (!fields[2]?.includes('master') || fields[2].includes('fail')) continue;
    for (const range of fields.slice(8)) {
      const [from, to = from] = range.split('-').map(Number);
      if (slot >= from && slot <= to) return Number(fields[1].split('@')[0].split(':')[1]);
    }
  }
  throw new Error(`no primary owns slot ${slot}`);
};

test('/health says cluster with three primaries; 2 per 5 s exact for keys on every primary, across instances', async ({ cluster, servers }) => {
  const health = (await (await servers[0].get('/health')).json()) as { limiter: { mode: string; nodes: number } };
  assert.is(health.limiter.mode, 'cluster');
  assert.is(health.limiter.nodes, 3);
  const owners = new Set(names.map((n) => ownerPort(cluster, n)));
  assert.is(owners.size, 3, 'the keys fall on every primary');
  for (const name of names) {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await ask(servers[i % 3], name));
    assert.equal(statuses, [200, 200, 429, 429], name);
  }
  // The function's keys are on the primary of their slot.
  const admin = createClient({ url: `redis://127.0.0.1:${ownerPort(cluster, names[0])}` });
  await admin.connect();
  assert.is(await admin.lLen(keysOf(sha256Hex(names[0]))[0]), 2);
  await admin.close();
  // /usage reads every primary: each key's two accepted requests, on whichever primary it lives.
  const usage = (await (await servers[1].get('/usage')).json()) as { keys: Array<{ id: string; today: number | null }> };
  const today = Object.fromEntries(usage.keys.map((k) => [k.id, k.today]));
  for (const name of names) assert.is(today[sha256Hex(name).slice(0, 8)], 2, name);
  for (const name of probes) assert.is(today[sha256Hex(name).slice(0, 8)], 0, name);
});

test('a primary killed: only its keys are refused, and its replica is followed once promoted', async ({ cluster, servers }) => {
  await new Promise((r) => setTimeout(r, 5100));
  const victimPort = ownerPort(cluster, names[0]);
  const onVictim = names.filter((n) => ownerPort(cluster, n) === victimPort);
  const probe = probes.find((n) => ownerPort(cluster, n) === victimPort)!;
  const elsewhere = names.filter((n) => ownerPort(cluster, n) !== victimPort);
  const victim = cluster.nodes.find((n) => n.port === victimPort)!;
  const killedAt = performance.now();
  await victim.stop('SIGKILL');
  assert.is(await ask(servers[0], elsewhere[0]), 200, 'a key of another primary');
  assert.is(await ask(servers[0], onVictim[0]), 503, 'a key of the killed primary, before the promotion');
  // The promotion: a live node's map names another live primary for the slot.
  const promoted = () => {
    try {
      return ownerPort(cluster, names[0]) !== victimPort;
    } catch {
      return false;
    }
  };
  await eventually(promoted, 15_000, 'the replica promoted');
  const promotedAt = performance.now();
  const done = new Set<number>();
  await eventually(async () => {
    for (let i = 0; i < servers.length; i++) if (!done.has(i) && (await ask(servers[i], probe)) === 200) done.add(i);
    return done.size === servers.length;
  }, 15_000, 'the promoted replica followed by every instance');
  const followedMs = performance.now() - promotedAt;
  console.log(`      cluster: primary killed, replica promoted ${Math.round(promotedAt - killedAt)} ms later, followed ${Math.round(followedMs)} ms after the promotion`);
  assert.is(await ask(servers[2], elsewhere[1]), 200);
});

test('the function flushed on one primary is loaded again there', async ({ cluster, servers }) => {
  await new Promise((r) => setTimeout(r, 5100));
  const port = ownerPort(cluster, names[3]);
  const node = cluster.nodes.find((n) => n.port === port)!;
  cluster.cli(node, 'FUNCTION', 'FLUSH');
  assert.is(await ask(servers[0], names[3]), 200);
  assert.match(cluster.cli(node, 'FUNCTION', 'LIST'), 'proxylist_v2');
});

test.run();
