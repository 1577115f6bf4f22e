import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { metricValue as value, readRaw } from '../helpers/http-read.js';
import { sha256Hex } from '../../src/access/keys.js';
import { assertUsageDocumented } from '../helpers/openapi.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, type TestServer } from '../helpers/server.js';

const snapshot = encodeSnapshot(generateRecords({ records: 300, seed: 6, now: TEST_NOW_S }), TEST_NOW_S);
const keys = { keys: [{ key: TEST_KEY, limits: { per_window: null, daily: null, subnets: null } }, { key: 'two', limits: { per_window: 2 } }] };


const test = suite<{ t: TestServer }>('/metrics');
test.before.each(async (ctx) => {
  // Renders and cache hits are counted by the thread that answers: one thread, for counts that say which happened.
  ctx.t = await startTestServer({ snapshot, keys, options: { threads: 1 } });
});
test.after.each((ctx) => ctx.t.close());

test('series of docs/operations.md counted as requests are answered', async ({ t }) => {
  for (let i = 0; i < 5; i++) await (await t.api('count=3')).text();
  await (await t.api('type=bogus')).text();
  for (let i = 0; i < 4; i++) await (await t.get('/api?key=two&count=1')).text(); // 2 accepted, 2 refused
  await (await t.get('/nowhere')).text();
  const res = await t.get('/metrics');
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', 'text/plain');
  const text = await res.text();
  assert.is(value(text, 'proxylist_http_requests_total{route="/api",status="200"}'), 7);
  assert.is(value(text, 'proxylist_http_requests_total{route="/api",status="400"}'), 1);
  assert.is(value(text, 'proxylist_http_requests_total{route="/api",status="429"}'), 2);
  assert.is(value(text, 'proxylist_http_requests_total{route="other",status="404"}'), 1);
  assert.is(value(text, 'proxylist_http_request_duration_seconds_count{route="/api"}'), 10);
  assert.is(value(text, 'proxylist_limit_rejections_total{limit="frequency"}'), 2);
  assert.is(value(text, 'proxylist_limit_rejections_total{limit="daily"}'), 0);
  assert.is(value(text, 'proxylist_snapshot_records'), t.server.feed.current!.rows);
  assert.is(value(text, 'proxylist_snapshot_skipped_records'), 0);
  assert.is(value(text, 'proxylist_snapshot_age_seconds'), 0, 'the frozen clock says generated_at is now');
  assert.is(value(text, 'proxylist_snapshot_reloads_ok_total'), 1);
  assert.is(value(text, 'proxylist_snapshot_reloads_failed_total'), 0);
  // count=3 five times: one render, then four repeated answers; count=1 twice (a limited key): a render and a repeat, with the key's own RateLimit fields.
  assert.is(value(text, 'proxylist_repeated_answers_total'), 5, 'count=3 repeated four times, count=1 once');
  assert.is(value(text, 'proxylist_response_cache_hits_total'), 0, 'no answer went the whole way twice');
  assert.is(value(text, 'proxylist_response_cache_misses_total'), 2);
  assert.ok(value(text, 'proxylist_response_cache_bytes') > 0);
  assert.is(value(text, 'proxylist_keys_loaded'), 2);
  assert.match(text, 'proxylist_process_resident_memory_bytes');
});

test('/usage: every key with this instance\'s counts of the day, no key in it, as openapi.json says', async ({ t }) => {
  for (let i = 0; i < 3; i++) await (await t.api('count=1')).text();
  for (let i = 0; i < 4; i++) await (await t.get('/api?key=two&count=1')).text(); // 2 accepted, 2 refused
  const res = await t.get('/usage');
  assert.is(res.status, 200);
  assert.is(res.headers.get('cache-control'), 'no-store');
  const text = await res.text();
  assert.not.match(text, TEST_KEY);
  const usage = JSON.parse(text) as { day: string; limiter: string; keys: Array<{ id: string; today: number; subnets: number | null; limits: { per_window: number | null } }> };
  assertUsageDocumented(usage);
  assert.is(usage.limiter, 'memory');
  assert.is(usage.day, '2026-11-28', 'the service day of the frozen clock');
  const byId = Object.fromEntries(usage.keys.map((k) => [k.id, k]));
  assert.equal(Object.keys(byId).sort(), [sha256Hex(TEST_KEY).slice(0, 8), sha256Hex('two').slice(0, 8)].sort());
  assert.is(byId[sha256Hex(TEST_KEY).slice(0, 8)].today, 3);
  assert.is(byId[sha256Hex('two').slice(0, 8)].today, 2);
  assert.is(byId[sha256Hex('two').slice(0, 8)].subnets, 1, 'the default subnet limit counts the loopback subnet');
  assert.is(byId[sha256Hex('two').slice(0, 8)].limits.per_window, 2);
});

test.run();

const denied = suite<{ t: TestServer }>('/metrics access');
denied.after((ctx) => ctx.t?.close());

denied('--metrics-allow that excludes the client: 403 for /metrics and /usage, and /api is unaffected', async (ctx) => {
  const t = (ctx.t = await startTestServer({ snapshot, keys, options: { metricsAllow: ['10.0.0.0/8'] } }));
  const res = await t.get('/metrics');
  assert.is(res.status, 403);
  assert.is(await res.text(), 'Error: Metrics are not available from this address');
  assert.is((await t.api('count=1')).status, 200);
  const usage = await t.get('/usage');
  assert.is(usage.status, 403);
  assert.is(await usage.text(), 'Error: Usage is not available from this address');
  // /health: the status and the snapshot's time alone, with the same status code.
  const health = await t.get('/health');
  assert.is(health.status, 200);
  const body = (await health.json()) as { status: string; snapshot: Record<string, unknown> };
  assert.equal(Object.keys(body), ['status', 'snapshot']);
  assert.is(body.status, 'ok');
  assert.equal(Object.keys(body.snapshot), ['generated_at']);
  assert.is(Date.parse(body.snapshot.generated_at as string) / 1000, t.server.feed.current!.meta.generatedAt);
  const head = await t.get('/health', { method: 'HEAD' });
  assert.is(head.status, 200);
});

const hosts = suite<{ t: TestServer }>('/metrics and /usage: the Host the operator allows');
hosts.after((ctx) => ctx.t?.close());

hosts('a name rebound to this host is refused; an address, localhost and a name of --operator-hosts are answered, with any port', async (ctx) => {
  const t = (ctx.t = await startTestServer({ snapshot, keys, options: { operatorHosts: ['metrics.internal'] } }));
  const port = t.server.port;
  for (const path of ['/metrics', '/usage']) {
    for (const host of ['attacker.example', `attacker.example:${port}`, 'metrics.internal.attacker.example', 'localhost.attacker.example']) {
      const refused = await readRaw(port, path, { headers: { host } });
      assert.is(refused.status, 403, `${path} for Host ${host}`);
      assert.is(refused.body.toString(), 'Error: Metrics and usage answer only an address, localhost or a name of --operator-hosts in Host');
    }
    for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, `[::1]:${port}`, 'METRICS.internal:9100', '10.1.2.3']) {
      assert.is((await readRaw(port, path, { headers: { host } })).status, 200, `${path} for Host ${host}`);
    }
  }
  assert.is((await readRaw(port, `/api?key=${TEST_KEY}&count=1`, { headers: { host: 'attacker.example' } })).status, 200, '/api answers any Host');
  const rebound = JSON.parse((await readRaw(port, '/health', { headers: { host: 'attacker.example' } })).body.toString()) as Record<string, unknown>;
  assert.equal(Object.keys(rebound), ['status', 'snapshot'], '/health to a rebound name: the public document');
});

const proxied = suite<{ t: TestServer }>('/metrics and /usage behind a trusted proxy');
proxied.after((ctx) => ctx.t?.close());

proxied('judged on the client it forwards for, as the limits read it: never on the proxy\'s own loopback address', async (ctx) => {
  // The default --metrics-allow admits loopback; the proxy is on loopback too.
  const t = (ctx.t = await startTestServer({ snapshot, keys, options: { trustProxy: ['127.0.0.1'] } }));
  const from = (xff: string | null) => (path: string) => t.get(path, xff === null ? {} : { headers: { 'x-forwarded-for': xff } });
  for (const path of ['/metrics', '/usage']) {
    const outside = await from('203.0.113.7')(path);
    assert.is(outside.status, 403, `${path} for a client on the internet, through the proxy`);
    await outside.arrayBuffer();
    // haproxy appends its own line: every line is read, the right-most untrusted address wins.
    const twoLines = await t.get(path, { headers: [['x-forwarded-for', '127.0.0.9'], ['x-forwarded-for', '198.51.100.2']] });
    assert.is(twoLines.status, 403, `${path}: the right-most untrusted address is the client`);
    await twoLines.arrayBuffer();
    const operator = await from('127.0.0.9')(path);
    assert.is(operator.status, 200, `${path} for an operator on loopback, through the proxy`);
    await operator.arrayBuffer();
    const direct = await from(null)(path);
    assert.is(direct.status, 200, `${path} asked of the instance directly`);
    await direct.arrayBuffer();
  }
  // /health: the whole document for the operator, the status and the snapshot's time for a client on the internet.
  const outside = (await (await from('203.0.113.7')('/health')).json()) as Record<string, unknown>;
  assert.equal(Object.keys(outside), ['status', 'snapshot'], JSON.stringify(outside));
  assert.not.ok(JSON.stringify(outside).includes(t.snapshot), 'no file path');
  const inside = (await (await from('127.0.0.9')('/health')).json()) as { snapshot: { file: string }; keys: { count: number } };
  assert.is(inside.snapshot.file, t.snapshot);
  assert.is(typeof inside.keys.count, 'number');
});

proxied.run();

denied.run();
hosts.run();
