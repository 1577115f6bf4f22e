import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { CLI, exitWithin, freePort, runCli, untilReady } from '../helpers/cli.js';
import { captureLog } from '../helpers/log.js';
import { TEST_NOW_S, eventually, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/** Broken keys and state files: the server keeps serving with what it has, and logs why. */
const snapshot = encodeSnapshot(generateRecords({ records: 100, seed: 4, now: TEST_NOW_S }), TEST_NOW_S);
const KEYS = { keys: [{ key: 'kept', limits: { per_window: null } }] };

const keys = suite<{ t: TestServer; log: ReturnType<typeof captureLog> }>('a broken keys file');
keys.before(async (ctx) => {
  ctx.log = captureLog();
  ctx.t = await startTestServer({ snapshot, keys: KEYS, options: { log: ctx.log.log } });
});
keys.after((ctx) => ctx.t?.close());

const status = async (t: TestServer, key: string) => (await t.get(`/api?key=${key}&count=1`)).status;
const rejectedFlag = async (t: TestServer) => /^proxylist_keys_file_rejected (\d)$/m.exec(await (await t.get('/metrics')).text())![1];

keys('invalid JSON, a cut-off file and every kind of wrong shape: rejected with a reason, the keys in force stay', async ({ t, log }) => {
  const broken: Array<[string, RegExp]> = [
    ['{"keys": [{"key": "new"', /JSON/],
    ['', /JSON/],
    ['{"keys": [{"key": "new"}]} trailing', /JSON/],
    ['null', /keys/],
    ['[]', /keys/],
    ['"keys"', /keys/],
    ['{}', /keys/],
    ['{"keys": {}}', /keys/],
    ['{"keys": [{"key": "new", "sha256": "' + 'a'.repeat(64) + '"}]}', /exactly one|key|sha256/],
    ['{"keys": [{"name": "nothing"}]}', /key|sha256/],
    ['{"keys": [{"key": ""}]}', /key/],
    ['{"keys": [{"sha256": "xyz"}]}', /sha256/],
    ['{"keys": [{"key": "new", "limits": {"daily": -1}}]}', /daily/],
    ['{"keys": [{"key": "new", "limits": {"per_window": 1.5}}]}', /per_window/],
    ['{"keys": [{"key": "new", "expires_at": "tomorrow"}]}', /expires_at/],
    ['{"keys": [{"key": "new", "disabled": "yes"}]}', /disabled/],
  ];
  for (const [text, reason] of broken) {
    const before = log.events('keys_rejected').length;
    writeFileAtomic(t.keys, text);
    await eventually(() => log.events('keys_rejected').length === before + 1, 10_000, `the rejection of ${text}`);
    assert.match(String(log.events('keys_rejected').at(-1)!.reason), reason, text);
    assert.is(await status(t, 'kept'), 200, `kept after ${text}`);
    assert.is(await status(t, 'new'), 401);
    assert.is(await rejectedFlag(t), '1');
  }
  writeFileAtomic(t.keys, JSON.stringify(KEYS));
  await eventually(async () => (await rejectedFlag(t)) === '0', 10_000, 'a good file again');
});

keys('the keys file deleted while watched: the keys in force stay; recreated, it is read again', async ({ t, log }) => {
  rmSync(t.keys);
  await eventually(() => log.events('keys_missing').length > 0, 10_000, 'the deletion noticed');
  assert.is(await status(t, 'kept'), 200);
  assert.is(await rejectedFlag(t), '1');
  writeFileAtomic(t.keys, JSON.stringify({ keys: [{ key: 'other', limits: { per_window: null } }] }));
  await eventually(async () => (await status(t, 'other')) === 200, 10_000, 'the recreated file');
  assert.is(await status(t, 'kept'), 401);
  assert.is(await rejectedFlag(t), '0');
});

keys.run();

const state = suite('a broken state file');

for (const [what, content] of [
  ['cut off', '{"version":1,"day":20'],
  ['of the wrong shape', '{"version":1,"day":"today","keys":[]}'],
  ['of another version', '{"version":2,"day":1,"keys":{}}'],
  ['binary garbage', '\u0000\u00ff\u0001'],
] as const) {
  state(`${what}: set aside, the server starts empty, serves and saves anew`, async () => {
    const dir = tempDir();
    const path = join(dir, 'state.json');
    writeFileSync(path, content);
    const { log, events } = captureLog();
    const t = await startTestServer({ snapshot, keys: KEYS, options: { state: path, log } });
    try {
      assert.is(events('state_corrupt').length, 1);
      assert.ok(readdirSync(dir).some((f) => f.startsWith('state.json.corrupt-')), 'set aside');
      assert.is(await status(t, 'kept'), 200);
    } finally {
      await t.close();
    }
    assert.ok(existsSync(path), 'saved at stop');
    rmSync(dir, { recursive: true, force: true });
  });
}

state('a state path that is a folder: logged as unreadable, and every save failure logged, while serving', async () => {
  const dir = tempDir();
  const path = join(dir, 'state.json');
  mkdirSync(path);
  const { log, events } = captureLog();
  const t = await startTestServer({ snapshot, keys: KEYS, options: { state: path, log } });
  try {
    assert.is(events('state_unreadable').length, 1);
    assert.is(await status(t, 'kept'), 200);
  } finally {
    await t.close();
  }
  assert.ok(events('state_save_failed').length >= 1, 'the failed save at stop is logged');
  rmSync(dir, { recursive: true, force: true });
});

state('a read-only state folder: the server serves, logs each failed save, and stops cleanly', async () => {
  const dir = tempDir();
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 50, seed: 4, now: Math.floor(Date.now() / 1000) }), Math.floor(Date.now() / 1000)));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ key: 'kept', limits: { per_window: null } }] }));
  // Root writes anywhere: as root the server runs as nobody, which may read
  // but not write the folder, if nobody can read this project at all. If not
  // (a private checkout), the state goes under /proc, where no one may create a file.
  const asRoot = process.getuid?.() === 0;
  const NOBODY = { uid: 65534, gid: 65534 };
  const nobodyReads = asRoot && spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(CLI)})`], NOBODY).status === 0;
  chmodSync(dir, 0o755);
  for (const f of ['snapshot.msgpack', 'keys.json']) chmodSync(join(dir, f), 0o644);
  chmodSync(stateDir, 0o555);
  const statePath = asRoot && !nobodyReads ? '/proc/self/usage.json' : join(stateDir, 'usage.json');
  const port = await freePort();
  const child = runCli(
    ['serve', '--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--port', port, '--host', '127.0.0.1', '--state', statePath],
    {},
    nobodyReads ? NOBODY : undefined,
  );
  try {
    await untilReady(port);
    for (let i = 0; i < 3; i++) assert.is((await fetch(`http://127.0.0.1:${port}/api?key=kept&count=1`)).status, 200);
    await eventually(() => child.stdout().includes('"event":"state_save_failed"'), 8000, 'the failed save logged');
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=kept&count=1`)).status, 200);
  } finally {
    child.proc.kill('SIGTERM');
  }
  assert.is(await exitWithin(child, 15_000), 0);
  assert.not.ok(existsSync(join(stateDir, 'usage.json')));
  chmodSync(stateDir, 0o755);
  rmSync(dir, { recursive: true, force: true });
});

state.run();
