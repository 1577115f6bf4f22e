import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestAuthority } from '../../support/certificates.js';
import { needCommand } from '../helpers/cli.js';
import { readRaw } from '../helpers/http-read.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/** deploy/monitoring: the alert rules pass promtool, and every series the rules and the dashboard name is served by /metrics. */
const file = (name: string) => fileURLToPath(new URL(`../../../deploy/monitoring/${name}`, import.meta.url));
const alerts = readFileSync(file('alerts.yml'), 'utf8');
const dashboard = JSON.parse(readFileSync(file('grafana-dashboard.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
const seriesIn = (text: string): string[] => [...new Set(text.match(/proxylist_[a-z0-9_]+/g) ?? [])];

interface Ctx {
  t: TestServer;
  dir: string;
  /** GET /metrics of the live server, over HTTPS. */
  metrics(): Promise<string>;
}

const test = suite<Ctx>('deploy/monitoring');
// A server over HTTPS, so that the certificate's series are served too.
test.before(async (ctx) => {
  ctx.dir = tempDir();
  const authority = new TestAuthority(ctx.dir);
  const pair = authority.issue('server');
  const ca = readFileSync(authority.ca);
  ctx.t = await startTestServer({ snapshot: encodeSnapshot(generateRecords({ records: 100, seed: 98, now: TEST_NOW_S }), TEST_NOW_S), options: { tlsCert: pair.cert, tlsKey: pair.key } });
  // One answer per route, so that every labelled series has a sample.
  await readRaw(ctx.t.server.port, `/api?key=${TEST_KEY}&count=1`, { tls: { ca } });
  ctx.metrics = async () => (await readRaw(ctx.t.server.port, '/metrics', { tls: { ca } })).body.toString();
});
test.after(async (ctx) => {
  await ctx.t.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

test('promtool check rules accepts the alert rules', () => {
  needCommand('promtool', 'prometheus');
  const run = spawnSync('promtool', ['check', 'rules', file('alerts.yml')], { encoding: 'utf8' });
  assert.is(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, 'SUCCESS: 10 rules found');
});

test('promtool test rules: the certificate alerts fire 14 days before expiry and on refused renewals, and not before', () => {
  needCommand('promtool', 'prometheus');
  const run = spawnSync('promtool', ['test', 'rules', file('alerts.test.yml')], { encoding: 'utf8' });
  assert.is(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, 'SUCCESS');
});

test('the rules cover the snapshot, reloads, the origins, 5xx, the limiter, pending bodies, p99 latency and the certificate', () => {
  for (const name of ['ProxylistCertificateExpiring', 'ProxylistCertificateRenewalFailing', 'ProxylistSnapshotStale', 'ProxylistReloadsFailing', 'ProxylistOriginFailing', 'ProxylistServerErrors', 'ProxylistLimiterDown', 'ProxylistPendingBodiesGrowing', 'ProxylistLatencyHigh']) {
    assert.match(alerts, `alert: ${name}`);
  }
});

test('docs/operations.md names every series a live server\'s /metrics serves', async ({ metrics }) => {
  const reference = readFileSync(fileURLToPath(new URL('../../../docs/operations.md', import.meta.url)), 'utf8');
  const served = [...(await metrics()).matchAll(/^# TYPE (proxylist_[a-z0-9_]+)/gm)].map((m) => m[1])
    .filter((name) => !/^proxylist_(process|nodejs)_/.test(name)); // prom-client's own, named there by their prefix
  assert.ok(served.length >= 15, `${served.length} series`);
  const missing = served.filter((name) => !reference.includes(`\`${name}\``) && !reference.includes(`\`${name}{`));
  assert.equal(missing, [], 'documented in docs/operations.md');
});

test('every series the rules and the dashboard name exists in a live server\'s /metrics', async (ctx) => {
  const metrics = await ctx.metrics();
  const named = seriesIn(alerts + dashboard.panels.flatMap((p) => p.targets.map((x) => x.expr)).join('\n'));
  assert.ok(named.length >= 20, `${named.length} series`);
  for (const series of named) assert.match(metrics, new RegExp(`^${series}[{ ]`, 'm'), `${series} is not in /metrics`);
  const titles = dashboard.panels.map((p) => p.title).join(' | ');
  for (const want of ['status', 'latency', 'Snapshot age', 'records', 'cache', 'productions', 'Limiter', 'Rejections', 'Memory']) assert.match(titles, want);
});

test.run();
