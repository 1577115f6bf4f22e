import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePort, runCli, runCliSync, untilReady } from '../helpers/cli.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * What a new user or an operator meets in the first minutes (docs/testing.md; docs/operations.md, Running it): a bad keys file stops `serve` at once, every
 * file error is one line naming the path, Ctrl+C stops at once, and an
 * unsupported Node.js is named.
 */
const now = Math.floor(Date.now() / 1000);
const dir = tempDir();
const snapshot = join(dir, 'snapshot.msgpack');
writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 50, seed: 1, now }), now));
const goodKeys = join(dir, 'keys.json');
writeFileSync(goodKeys, JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }), { mode: 0o600 });

test('serve with a keys file that is missing, does not parse, or breaks the rules: one line, exit 1, never listening', async () => {
  const broken = join(dir, 'broken.json');
  writeFileSync(broken, '{"keys": [{"key": "a" "name": "b"}]}');
  const wrong = join(dir, 'wrong.json');
  writeFileSync(wrong, '{"keys": [{"name": "nothing"}]}');
  for (const [path, says] of [[join(dir, 'missing.json'), 'is missing'], [broken, 'is not valid JSON (line 1, column'], [wrong, 'rejected: keys[0]']]) {
    const port = await freePort();
    const r = runCliSync(['serve', '--snapshot', snapshot, '--keys', path, '--port', port, '--host', '127.0.0.1']);
    assert.is(r.status, 1, r.stderr);
    assert.is(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    assert.match(r.stderr, `proxylist: keys file ${path} ${says}`);
    assert.is(await fetch(`http://127.0.0.1:${port}/health`).then(() => 'answered', () => 'refused'), 'refused');
  }
});

test('every file error of the command line is one line that names the path and what is wrong', () => {
  const folder = join(dir, 'a-folder');
  mkdirSync(folder);
  const cases: Array<[string[], string]> = [
    [['snapshot', 'inspect', folder], `proxylist: cannot read snapshot ${folder}: it is a folder, not a file`],
    [['snapshot', 'inspect', join(dir, 'none.msgpack')], `proxylist: cannot read snapshot ${join(dir, 'none.msgpack')}: no such file, or its folder does not exist`],
    [['keys', 'add', '--keys', join(dir, 'no-folder', 'keys.json')], `proxylist: cannot write keys file ${join(dir, 'no-folder', 'keys.json')}: no such file, or its folder does not exist`],
    [['keys', 'list', '--keys', folder], `proxylist: cannot read keys file ${folder}: it is a folder, not a file`],
    [['keys', 'list', '--keys', join(snapshot, 'keys.json')], `proxylist: cannot read keys file ${join(snapshot, 'keys.json')}: a part of the path is not a folder`],
  ];
  for (const [args, line] of cases) {
    const r = runCliSync(args);
    assert.is(r.status, 1, args.join(' '));
    assert.is(r.stderr, line + '\n');
  }
});

test('serve of a folder as the snapshot: /health says what is wrong with the file, not that it is a bug', async () => {
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', dir, '--keys', goodKeys, '--port', port, '--host', '127.0.0.1']);
  try {
    await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status ?? 0) === 503, 10_000, 'listening');
    const body = await eventually(async () => /last_error":"c/.test(await (await fetch(`http://127.0.0.1:${port}/health`)).text()), 10_000, 'the error').then(async () => (await fetch(`http://127.0.0.1:${port}/health`)).text());
    assert.match(body, `cannot read snapshot ${dir}: it is a folder, not a file`);
    assert.not.match(body, 'a bug');
  } finally {
    child.proc.kill('SIGTERM');
    await exitWithin(child, 15_000);
  }
});

test('Ctrl+C stops at once: no new connection is taken, and the process exits without draining', async () => {
  const port = await freePort();
  // --drain-s is for a balancer's SIGTERM; a drain of 60 s would outlast the wait for the exit.
  const child = runCli(['serve', '--snapshot', snapshot, '--keys', goodKeys, '--port', port, '--host', '127.0.0.1', '--drain-s', '60']);
  await untilReady(port);
  child.proc.kill('SIGINT');
  assert.is(await exitWithin(child, 15_000), 0);
  assert.not.match(child.stdout(), '"event":"draining"');
  assert.is(await fetch(`http://127.0.0.1:${port}/health`).then(() => 'answered', () => 'refused'), 'refused');
});

test('an unsupported Node.js is named in one line, with the supported ones', () => {
  const { unsupported, SUPPORTED } = createRequire(import.meta.url)('../../../scripts/check-node.cjs') as { unsupported(v: string): string | null; SUPPORTED: number[] };
  assert.equal(SUPPORTED, [20, 22, 24, 26]);
  const engines = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
  assert.is(engines, SUPPORTED.map((v) => `^${v}.0.0`).join(' || '), 'package.json says the same');
  for (const v of ['20.20.2', '22.1.0', '24.21.0', '26.10.0']) assert.is(unsupported(v), null, v);
  assert.is(unsupported('25.0.0'), 'proxylist: Node.js 25.0.0 is not supported; use Node.js 20, 22, 24 or 26');
  assert.is(unsupported('18.20.0'), 'proxylist: Node.js 18.20.0 is not supported; use Node.js 20, 22, 24 or 26');
  // The running one is supported: the command line answers.
  assert.is(runCliSync(['--version']).status, 0);
});

test('the README tells a newcomer about HTTP/1.0 before the examples, docs/api.md at its start, and npm pack leaves nothing for git to pick up', () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const section = (title: string) => readme.slice(readme.indexOf(title), readme.indexOf('\n## ', readme.indexOf(title) + 1));
  assert.match(section('## Quick start'), 'HTTP/1.0');
  const api = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  assert.match(api.slice(0, api.indexOf('\n## ')), 'HTTP/1.0');
  const ignored = spawnSync('git', ['check-ignore', '-q', 'proxylist-0.1.0.tgz'], { cwd: new URL('../../..', import.meta.url) });
  assert.is(ignored.status, 0, 'the packed tarball is ignored');
});

test.run();
