import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { needCommand } from '../helpers/cli.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, startTestServer, type TestServer } from '../helpers/server.js';

/** deploy/monitoring: the alert rules pass promtool, and every series the rules and the dashboard name is served by /metrics. */
const file = (name: string) => fileURLToPath(new URL(`../../../deploy/monitoring/${name}`, import.meta.url));
const alerts = readFileSync(file('alerts.yml'), 'utf8');
const dashboard = JSON.parse(readFileSync(file('grafana-dashboard.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
const seriesIn = (text: string): string[] => [...new Set(text.match(/proxylist_[a-z0-9_]+/g) ?? [])];

const test = suite<{ t: TestServer }>('deploy/monitoring');
test.before(async (ctx) => {
  ctx.t = await startTestServer({ snapshot: encodeSnapshot(generateRecords({ records: 100, seed: 98, now: TEST_NOW_S }), TEST_NOW_S) });
  // One answer per route, so that every labelled series has a sample.
  await (await ctx.t.api('count=1')).arrayBuffer();
});
test.after((ctx) => ctx.t.close());

test('promtool check rules accepts the alert rules', () => {
  needCommand('promtool', 'prometheus');
  const run = spawnSync('promtool', ['check', 'rules', file('alerts.yml')], { encoding: 'utf8' });
  assert.is(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, 'SUCCESS: 8 rules found');
});

test('the rules cover the snapshot, reloads, the origins, 5xx, the limiter, pending bodies and p99 latency', () => {
  for (const name of ['ProxylistSnapshotStale', 'ProxylistReloadsFailing', 'ProxylistOriginFailing', 'ProxylistServerErrors', 'ProxylistLimiterDown', 'ProxylistPendingBodiesGrowing', 'ProxylistLatencyHigh']) {
    assert.match(alerts, `alert: ${name}`);
  }
});

test('docs/operations.md names every series a live server\'s /metrics serves', async ({ t }) => {
  const reference = readFileSync(fileURLToPath(new URL('../../../docs/operations.md', import.meta.url)), 'utf8');
  const served = [...(await (await t.get('/metrics')).text()).matchAll(/^# TYPE (proxylist_[a-z0-9_]+)/gm)].map((m) => m[1])
    .filter((name) => !/^proxylist_(process|nodejs)_/.test(name)); // prom-client's own, named there by their prefix
  assert.ok(served.length >= 15, `${served.length} series`);
  const missing = served.filter((name) => !reference.includes(`\`${name}\``) && !reference.includes(`\`${name}{`));
  assert.equal(missing, [], 'documented in docs/operations.md');
});

test('every series the rules and the dashboard name exists in a live server\'s /metrics', async ({ t }) => {
  const metrics = await (await t.get('/metrics')).text();
  const named = seriesIn(alerts + dashboard.panels.flatMap((p) => p.targets.map((x) => x.expr)).join('\n'));
  assert.ok(named.length >= 20, `${named.length} series`);
  for (const series of named) assert.match(metrics, new RegExp(`^${series}[{ ]`, 'm'), `${series} is not in /metrics`);
  const titles = dashboard.panels.map((p) => p.title).join(' | ');
  for (const want of ['status', 'latency', 'Snapshot age', 'records', 'cache', 'productions', 'Limiter', 'Rejections', 'Memory']) assert.match(titles, want);
});

test.run();
