import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Hex } from '../../src/access/keys.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { systemClock } from '../../src/core/clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { freePorts, runCli } from '../helpers/cli.js';
import { haproxyConfig, startHaproxy } from '../helpers/haproxy.js';
import { StaticOrigin } from '../helpers/nginx.js';
import { assertUsageDocumented } from '../helpers/openapi.js';
import { RedisServer } from '../../support/redis.js';
import { eventually, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/**
 * One keys file for every instance (docs/several-instances.md): a real
 * nginx serves it to three instances that share a real redis-server, behind
 * haproxy with the configuration of deploy/.
 */
const now = Math.floor(Date.now() / 1000);
const snapshot = encodeSnapshot(generateRecords({ records: 300, seed: 61, now }), now);
const POLL_S = 1;
/** Each key is its name behind a secret prefix: /usage names keys, and must never show one. */
const SECRET = 'k-7f3a9c-';
const entry = (name: string, extra: Record<string, unknown> = {}) => ({ sha256: sha256Hex(SECRET + name), name, limits: { per_window: null, daily: 1000, subnets: 10 }, ...extra });
const keysFile = (revoked: string[] = []) => JSON.stringify({ keys: ['alpha', 'beta', 'counted'].map((k) => entry(k, revoked.includes(k) ? { disabled: true } : {})) });

interface Health { keys: { source: string; loaded_at: string | null; count: number; last_error: string | null } }
interface Ctx { origin: StaticOrigin; redis: RedisServer; servers: TestServer[]; haproxy: ReturnType<typeof startHaproxy>; lb: number; dir: string }
const test = suite<Ctx>('one keys file from an http origin, three instances and Redis behind haproxy');

test.before(async (ctx) => {
  ctx.origin = await StaticOrigin.start();
  writeFileAtomic(join(ctx.origin.root, 'keys.json'), keysFile());
  ctx.redis = await RedisServer.start();
  const options = { keys: ctx.origin.url('keys.json'), keysPollS: POLL_S, limiter: ctx.redis.url, trustProxy: ['127.0.0.1'] };
  ctx.servers = await Promise.all([0, 1, 2].map(() => startTestServer({ snapshot, clock: systemClock, options })));
  const [lb] = await freePorts(1);
  ctx.lb = lb;
  ctx.dir = tempDir();
  // Plain HTTP at the front: this is about the keys, not TLS (https-balancer.test.ts).
  ctx.haproxy = startHaproxy(ctx.dir, haproxyConfig({ front: lb, instances: ctx.servers.map((t) => t.server.port) }));
  await eventually(async () => (await fetch(`http://127.0.0.1:${lb}/api?key=${SECRET}alpha&count=1`).catch(() => null))?.status === 200, 10_000, 'haproxy and the instances ready');
});
test.after(async (ctx) => {
  await ctx.haproxy.stop();
  await Promise.all((ctx.servers ?? []).map((t) => t.close()));
  await ctx.redis.close();
  await ctx.origin.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

const status = async (t: TestServer, name: string): Promise<number> => (await fetch(`${t.base}/api?key=${SECRET}${name}&count=1`)).status;
const health = async (t: TestServer): Promise<Health> => (await (await t.get('/health')).json()) as Health;

test('every instance takes its keys from the origin, and /health says from where', async ({ origin, servers }) => {
  for (const t of servers) {
    const h = await health(t);
    assert.is(h.keys.source, origin.url('keys.json'));
    assert.is(h.keys.count, 3);
    assert.is(h.keys.last_error, null);
    assert.ok(h.keys.loaded_at && Date.parse(h.keys.loaded_at) > 0);
    assert.is(await status(t, 'beta'), 200);
  }
  // The instances poll with conditional GETs, which nginx answers 304 while the file is the same.
  await eventually(() => origin.statuses('keys.json').filter((s) => s === 304).length >= 3, 10_000, '304s');
});

test('a key revoked at the origin gets 401 from every instance within --keys-poll-s + 1 s', async ({ origin, servers }) => {
  const revokedAt = performance.now();
  writeFileAtomic(join(origin.root, 'keys.json'), keysFile(['beta']));
  const refusedAfter = await Promise.all(servers.map(async (t) => {
    while ((await status(t, 'beta')) !== 401) {
      if (performance.now() - revokedAt > 10_000) throw new Error('beta still accepted after 10 s');
      await new Promise((r) => setTimeout(r, 25));
    }
    return performance.now() - revokedAt;
  }));
  const slowest = Math.max(...refusedAfter);
  assert.ok(slowest <= (POLL_S + 1) * 1000, `refused by every instance ${refusedAfter.map(Math.round).join(', ')} ms after the revocation`);
  for (const t of servers) assert.is(await status(t, 'alpha'), 200);
  process.stdout.write(`  revocation reached all three instances in ${Math.round(slowest)} ms\n`);
});

test('an origin that answers 500, or serves a file that does not parse, leaves the keys in force', async ({ origin, servers }) => {
  writeFileSync(join(origin.root, 'fail'), '');
  await eventually(async () => (await Promise.all(servers.map(health))).every((h) => /500/.test(h.keys.last_error ?? '')), 10_000, 'the 500 in /health');
  for (const t of servers) {
    assert.is(await status(t, 'alpha'), 200);
    assert.is(await status(t, 'beta'), 401);
  }
  const metrics = await (await servers[0].get('/metrics')).text();
  assert.match(metrics, 'proxylist_origin_failing{what="keys"} 1');
  rmSync(join(origin.root, 'fail'));

  writeFileAtomic(join(origin.root, 'keys.json'), '{"keys": [ {"sha256": ');
  await eventually(async () => (await Promise.all(servers.map(health))).every((h) => /^keys file is not valid JSON/.test(h.keys.last_error ?? '')), 10_000, 'the rejection in /health');
  for (const t of servers) {
    assert.is(await status(t, 'alpha'), 200);
    assert.is(await status(t, 'beta'), 401);
    assert.is((await health(t)).keys.count, 3);
  }

  // A good file again: beta, revoked until now, is back on every instance, and no error is left.
  writeFileAtomic(join(origin.root, 'keys.json'), keysFile());
  await eventually(async () => (await Promise.all(servers.map((t) => status(t, 'beta')))).every((s) => s === 200), 10_000, 'beta back');
  for (const t of servers) assert.is((await health(t)).keys.last_error, null);
  assert.match(await (await servers[0].get('/metrics')).text(), 'proxylist_origin_failing{what="keys"} 0');
});

test('/usage agrees with the requests made through haproxy, on every instance; the CLI prints it; other addresses are refused', async ({ servers, lb }) => {
  const made = 30;
  for (let i = 0; i < made; i++) assert.is((await fetch(`http://127.0.0.1:${lb}/api?key=${SECRET}counted&count=1`)).status, 200);
  for (const t of servers) {
    const res = await t.get('/usage');
    const doc = await res.json() as { limiter: string; keys: Array<{ id: string; name: string; today: number; subnets: number }> };
    assertUsageDocumented(doc);
    assert.is(doc.limiter, 'redis');
    const counted = doc.keys.find((k) => k.name === 'counted')!;
    assert.is(counted.today, made);
    assert.is(counted.subnets, 1);
    assert.is(counted.id, sha256Hex(SECRET + 'counted').slice(0, 8));
    assert.not.match(JSON.stringify(doc), SECRET, 'no key itself');
    assert.not.match(JSON.stringify(doc), sha256Hex(SECRET + 'counted'), 'nor its whole hash');
  }

  const table = runCli(['keys', 'usage', '--url', servers[1].base]);
  assert.is(await table.exited, 0, table.stderr());
  const row = table.stdout().split('\n').find((l) => /\bcounted\b/.test(l));
  assert.ok(row, table.stdout());
  assert.equal(row!.trim().split(/\s+/).slice(0, 4), [sha256Hex(SECRET + 'counted').slice(0, 8), 'counted', String(made), '1']);
  const json = runCli(['keys', 'usage', '--url', servers[2].base, '--json']);
  assert.is(await json.exited, 0, json.stderr());
  assert.is(JSON.parse(json.stdout()).keys.find((k: { name: string }) => k.name === 'counted').today, made);

  // An instance that lets only another network read /usage refuses loopback, and the CLI says so.
  const closed = await startTestServer({ snapshot, clock: systemClock, options: { metricsAllow: ['10.0.0.0/8'] } });
  try {
    const res = await closed.get('/usage');
    assert.is(res.status, 403);
    const refused = runCli(['keys', 'usage', '--url', closed.base]);
    assert.is(await refused.exited, 1);
    assert.match(refused.stderr(), /answered 403/);
  } finally {
    await closed.close();
  }
});

test('an instance whose keys cannot be downloaded at start does not start, and says why', async ({ origin }) => {
  const err = await startTestServer({ snapshot, clock: systemClock, options: { keys: origin.url('missing.json') } }).then(() => null, (e: Error) => e);
  assert.ok(err, 'the start failed');
  assert.match(err!.message, /keys origin http:\/\/127\.0\.0\.1:\d+\/missing\.json: the origin answered 404/);
});

test.run();
