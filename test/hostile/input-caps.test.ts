import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePorts, runCli, untilReady, type Child } from '../helpers/cli.js';
import { StaticOrigin } from '../helpers/nginx.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * What the service takes in is capped and reported as it is (docs/operations.md, Memory, hostile clients and secrets): an origin download past
 * --snapshot-max-mb, a keys file that does not parse (no part of a key in
 * the log), a keys file of plain keys that anyone may read, and a snapshot
 * folder that cannot be looked into.
 */
const now = Math.floor(Date.now() / 1000);
const KEYS = { keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] };

async function serve(args: string[]): Promise<{ child: Child; base: string; stop(): Promise<void> }> {
  const [port] = await freePorts(1);
  const child = runCli(['serve', ...args, '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0']);
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.proc.kill('SIGTERM');
      await exitWithin(child, 15_000);
    },
  };
}

const health = async (base: string): Promise<{ status: string; reloads: { last_error: string | null }; origin?: { last_error: string | null } }> =>
  (await (await fetch(`${base}/health`)).json()) as never;

test('an origin file larger than --snapshot-max-mb is refused, and the snapshot in force stays', async () => {
  const origin = await StaticOrigin.start();
  const dir = tempDir();
  writeFileSync(join(dir, 'keys.json'), JSON.stringify(KEYS));
  writeFileAtomic(join(origin.root, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 200, seed: 1, now }), now));
  const s = await serve(['--snapshot', origin.url('snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--snapshot-max-mb', '1', '--snapshot-poll-s', '1']);
  try {
    await eventually(async () => (await health(s.base).catch(() => null))?.status === 'ok', 10_000, 'the first snapshot');
    const before = await (await fetch(`${s.base}/api?key=k&time=100000`)).text();
    // About 3 MB: past the 1 MB cap.
    writeFileAtomic(join(origin.root, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 12_000, seed: 2, now }), now + 1));
    await eventually(async () => /--snapshot-max-mb 1/.test((await health(s.base)).origin?.last_error ?? ''), 10_000, 'the refusal in /health');
    assert.is(await (await fetch(`${s.base}/api?key=k&time=100000`)).text(), before);
    // The line may reach the pipe a moment after /health says it.
    await eventually(() => s.child.stdout().includes('"event":"origin_failed"'), 5000, 'the origin_failed line');
  } finally {
    await s.stop();
    await origin.close();
  }
});

test('a keys file that does not parse stops serve with its line and column, and no part of a key reaches the output', async () => {
  const dir = tempDir();
  const SECRET = 'Zq8sVb2mLk4pXy7w';
  // The error is right after the key: JSON.parse's own message would quote the text before it.
  writeFileSync(join(dir, 'keys.json'), `{"keys": [\n  {"key": "${SECRET}" "name": "acme"}\n]}`, { mode: 0o600 });
  writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 50, seed: 1, now }), now));
  const s = await serve(['--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json')]);
  assert.is(await exitWithin(s.child, 15_000), 1);
  assert.is(s.child.stderr(), `proxylist: keys file ${join(dir, 'keys.json')} is not valid JSON (line 2, column 30)\n`);
  const output = s.child.stdout() + s.child.stderr();
  for (let i = 0; i + 4 <= SECRET.length; i++) assert.not.ok(output.includes(SECRET.slice(i, i + 4)), `the output holds "${SECRET.slice(i, i + 4)}" of the key`);
});

test('a keys file of plain keys that every user may read is warned of; one only its owner reads is not', async () => {
  const dir = tempDir();
  writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 50, seed: 1, now }), now));
  for (const [mode, warned] of [[0o644, true], [0o600, false]] as const) {
    const keys = join(dir, `keys-${mode.toString(8)}.json`);
    writeFileSync(keys, JSON.stringify(KEYS));
    chmodSync(keys, mode);
    const s = await serve(['--snapshot', join(dir, 'snapshot.msgpack'), '--keys', keys]);
    try {
      await untilReady(Number(new URL(s.base).port));
      assert.is(s.child.stdout().includes('"event":"keys_file_readable"'), warned, `mode ${mode.toString(8)}`);
    } finally {
      await s.stop();
    }
  }
});

test('a snapshot that cannot be looked at is reported as such, not as missing', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'keys.json'), JSON.stringify(KEYS));
  // A loop of links stands for any folder the service may not look into (root may look into any other).
  symlinkSync('loop', join(dir, 'loop'));
  mkdirSync(join(dir, 'missing-here'));
  const unreadable = await serve(['--snapshot', join(dir, 'loop', 'snapshot.msgpack'), '--keys', join(dir, 'keys.json')]);
  const missing = await serve(['--snapshot', join(dir, 'missing-here', 'snapshot.msgpack'), '--keys', join(dir, 'keys.json')]);
  try {
    await eventually(async () => (await health(unreadable.base).catch(() => null))?.reloads.last_error != null, 10_000, 'the first look');
    await eventually(async () => (await health(missing.base).catch(() => null))?.reloads.last_error != null, 10_000, 'the first look');
    assert.match((await health(unreadable.base)).reloads.last_error!, /^snapshot file cannot be read: ELOOP/);
    assert.is((await health(missing.base)).reloads.last_error, 'snapshot file is missing');
  } finally {
    await unreadable.stop();
    await missing.stop();
  }
});

test.run();
