import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { NaiveEngine } from '../reference/naive-engine.js';
import { SERVE_OPTIONS, envName } from '../../src/cli/serve-options.js';
import { exitWithin, freePort, runCli, runCliSync, untilReady } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

/** The table of serve options in docs/operations.md, one row per entry of SERVE_OPTIONS. */
function serveOptionsMarkdown(): string {
  // A pipe inside a cell must be escaped, even in code.
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  return [
    '| option | environment | default | meaning |',
    '|---|---|---|---|',
    ...SERVE_OPTIONS.map((s) => `| \`${cell(`--${s.name}${s.value ? ` ${s.value}` : ''}`)}\` | \`${envName(s.name)}\` | ${s.required ? 'required' : (s.shown ?? 'none')} | ${s.help} |`),
  ].join('\n');
}

const test = suite('command line');

test('snapshot generate is deterministic with --seed and --now, and inspect accepts it', async () => {
  const dir = tempDir();
  const outs = ['a', 'b', 'c'].map((n) => join(dir, `${n}.msgpack`));
  const args = (out: string, seed: string) => ['snapshot', 'generate', '--records', '3000', '--out', out, '--seed', seed, '--now', '1795867200'];
  for (const [i, out] of outs.entries()) assert.is(await exitWithin(runCli(args(out, i === 2 ? '8' : '7')), 20000), 0);
  const [a, b, c] = outs.map((f) => readFileSync(f));
  assert.ok(a.equals(b), 'same seed, same bytes');
  assert.not.ok(a.equals(c), 'another seed, other bytes');

  const inspect = runCli(['snapshot', 'inspect', outs[0]]);
  assert.is(await exitWithin(inspect, 20000), 0);
  const report = JSON.parse(inspect.stdout());
  assert.is(report.records + report.duplicates_dropped + report.skipped, 3000);
  assert.is(report.skipped, 0);
  assert.is(Object.values(report.by_type as Record<string, number>).reduce((x, y) => x + y, 0), report.records);
  assert.ok(Object.keys(report.by_country).length > 10, 'a real country mix');
  assert.ok(report.by_type.http > report.by_type.socks4, 'http is the most common type');
  // Who runs the exits, as the records kept say it.
  const kept = NaiveEngine.fromFile(a).records;
  const flagCounts = (flag: 'hosting' | 'mobile') => ({ true: kept.filter((r) => r[flag] === true).length, false: kept.filter((r) => r[flag] === false).length });
  const fromSnapshot = NaiveEngine.fromFile(a, { asnDb: false }).records.filter((r) => r.asn).length;
  const withAsn = kept.filter((r) => r.asn).length;
  assert.ok(withAsn > fromSnapshot, 'the database places exits the checker did not');
  assert.match(report.exit_networks.database, /^@ip-location-db\/asn \S+ \(\d{4}-\d{2}-\d{2}\)$/);
  assert.equal(report.exit_networks, {
    with_asn: withAsn,
    asn_from_snapshot: fromSnapshot,
    asn_from_database: withAsn - fromSnapshot,
    database: report.exit_networks.database,
    with_org: kept.filter((r) => r.org).length,
    asns: new Set(kept.filter((r) => r.asn).map((r) => r.asn)).size,
    hosting: flagCounts('hosting'),
    mobile: flagCounts('mobile'),
  });
  assert.ok(report.exit_networks.with_asn > report.records / 2 && report.exit_networks.with_org < report.exit_networks.with_asn, 'most records name their exit network, some without an organisation');
});

test('snapshot inspect exits non-zero, with the reason, on a file the server would reject', async () => {
  const dir = tempDir();
  const bad = join(dir, 'bad.msgpack');
  writeFileSync(bad, Buffer.from([0x92, 0x01]));
  const child = runCli(['snapshot', 'inspect', bad]);
  assert.is(await exitWithin(child, 20000), 1);
  assert.match(child.stderr(), 'truncated');
  const missing = runCli(['snapshot', 'inspect', join(dir, 'nope')]);
  assert.is(await exitWithin(missing, 20000), 1);
  assert.match(missing.stderr(), 'cannot read snapshot');
});

test('usage errors exit 2 with a message', async () => {
  const child = runCli(['serve', '--keys', 'k.json']);
  assert.is(await exitWithin(child, 10000), 2);
  assert.match(child.stderr(), 'missing --snapshot FILE|URL (or PROXYLIST_SNAPSHOT)');
  const unknown = runCli(['serve', '--snapshot', 'x', '--keys', 'y', '--bogus']);
  assert.is(await exitWithin(unknown, 10000), 2);
  assert.is(unknown.stderr(), 'proxylist: unknown option --bogus\n');
});

test('every command answers --help and -h, and the program its version', () => {
  for (const args of [['--help'], ['-h'], ['serve', '--help'], ['demo', '--help'], ['keys', '--help'], ['keys', 'add', '--help'], ['keys', 'list', '-h'], ['keys', 'revoke', '--help'],
    ['keys', 'enable', '--help'], ['snapshot', '--help'], ['snapshot', 'generate', '--help'], ['snapshot', 'inspect', '--help']]) {
    const run = runCliSync(args);
    assert.is(run.status, 0, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stdout, /proxylist/, args.join(' '));
    assert.is(run.stderr, '');
  }
  assert.match(runCliSync(['keys', 'add', '--help']).stdout, /^  --expires TIME /m);
  assert.match(runCliSync(['snapshot', 'generate', '--help']).stdout, /^  --records N /m);
  const version = runCliSync(['--version']);
  assert.is(version.stdout, `proxylist ${(JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version}\n`);
});

test('errors are one line for a person: no internal code, no doubled prefix', () => {
  for (const args of [['bogus'], ['snapshot'], ['snapshot', 'frobnicate'], ['keys', 'frobnicate'], ['serve', '--cache-mb', '-1'], ['snapshot', 'inspect'], ['snapshot', 'generate', '--records', '10', '--out', '/nonexistent-folder/s.msgpack']]) {
    const run = runCliSync(args);
    assert.ok(run.status !== 0 || args.length === 1, args.join(' '));
    if (run.status === 0) continue;
    assert.is(run.stderr.split('\n').filter(Boolean).length, 1, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, /^proxylist: /);
    assert.not.match(run.stderr, /\[E_|proxylist: proxylist/);
  }
  assert.match(runCliSync(['snapshot', 'generate', '--records', '10', '--out', '/nonexistent-folder/s.msgpack']).stderr, 'the folder /nonexistent-folder does not exist');
  assert.is(runCliSync(['serve', '--cache-mb', '-1']).stderr, 'proxylist: --cache-mb must be an integer from 0 to 65536, not "-1"\n');
});

test('snapshot generate reports distinct records and duplicates as inspect counts them', () => {
  const dir = tempDir();
  const out = join(dir, 's.msgpack');
  const run = runCliSync(['snapshot', 'generate', '--records', '1000', '--out', out, '--seed', '3']);
  assert.is(run.status, 0, run.stderr);
  const inspected = JSON.parse(runCliSync(['snapshot', 'inspect', out]).stdout) as { records: number; duplicates_dropped: number };
  assert.ok(inspected.duplicates_dropped > 0, 'the generator makes duplicates, as checkers do');
  assert.match(run.stdout, `wrote 1000 records`);
  assert.match(run.stdout, `: ${inspected.records} distinct, ${inspected.duplicates_dropped} duplicates`);
  assert.is(runCliSync(['snapshot', 'generate', '--records', '10', '--out', dir]).stderr, `proxylist: cannot write ${dir}: it is a folder\n`);
});

test('serve --help has a line per option, with its environment variable; the table of docs/operations.md is the same list', () => {
  const help = runCliSync(['serve', '--help']);
  assert.is(help.status, 0, help.stderr);
  for (const spec of SERVE_OPTIONS) assert.match(help.stdout, new RegExp(`^  --${spec.name}\\b.*; env ${envName(spec.name)}$`, 'm'), spec.name);
  const manual = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
  assert.ok(manual.includes(serveOptionsMarkdown()), 'docs/operations.md holds the options table as serve-options.ts makes it');
});

test('every serve option falls back to PROXYLIST_<NAME>, and a bad value is one line naming it', () => {
  for (const [env, message] of [
    ['PROXYLIST_DRAIN_S=soon', '--drain-s must be an integer from 0 to 3600, not "soon"'],
    ['PROXYLIST_CACHE_MB=-1', '--cache-mb must be an integer from 0 to 65536, not "-1"'],
    ['PROXYLIST_LIMITER=mysql://x', '--limiter must be memory, a redis:// URL or a redis-sentinel:// URL, not "mysql://x"'],
    ['PROXYLIST_LIMITER=redis-sentinel://127.0.0.1:26379', '--limiter: a Sentinel URL is redis-sentinel://[user:password@]host:port[,host:port...]/NAME'],
    ['PROXYLIST_LIMITER=redis-sentinel://u:s3cret@s1:26379,s2:99999/main', '--limiter: "s2:99999" is not a Sentinel\'s host:port'],
    ['PROXYLIST_LIMITER=redis://u:s3cret@a:6379,http://b:6379', '--limiter: each of a list of seeds must be a redis:// or rediss:// URL (not "http://b:6379")'],
    ['PROXYLIST_LIMITER_FALLBACK=disk', '--limiter-fallback must be deny or memory, not "disk"'],
    ['PROXYLIST_STATE=/tmp/x.json PROXYLIST_LIMITER=redis://127.0.0.1:1', '--state cannot be used with --limiter redis://...: Redis keeps the usage'],
  ]) {
    const vars = Object.fromEntries(env.split(' ').map((kv) => kv.split('=') as [string, string]));
    const run = runCliSync(['serve', '--snapshot', 's', '--keys', 'k'], vars);
    assert.is(run.status, 2, env);
    assert.is(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, message);
    assert.not.match(run.stderr, 's3cret');
  }
});

test('serve takes its settings from the environment and stops gracefully on SIGTERM and SIGINT', async () => {
  const dir = tempDir();
  const snapshot = join(dir, 's.msgpack');
  const keys = join(dir, 'k.json');
  assert.is(await exitWithin(runCli(['snapshot', 'generate', '--records', '500', '--out', snapshot]), 20000), 0);
  writeFileSync(keys, JSON.stringify({ keys: [{ key: 'k1' }] }));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const port = await freePort();
    const child = runCli(['serve'], { PROXYLIST_SNAPSHOT: snapshot, PROXYLIST_KEYS: keys, PORT: port, HOST: '127.0.0.1' });
    await untilReady(port);
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=k1&count=1`)).status, 200);
    child.proc.kill(signal);
    assert.is(await exitWithin(child, 15000), 0, `exit code after ${signal}`);
    assert.match(child.stdout(), '"event":"stopped"');
    assert.is(await fetch(`http://127.0.0.1:${port}/health`).then(() => 'open', () => 'closed'), 'closed');
  }
});

test.run();
