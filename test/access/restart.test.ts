import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { type Child, exitWithin, freePort, runCli, untilReady } from '../helpers/cli.js';
import { eventually, tempDir } from '../helpers/server.js';

/** Usage survives a restart: real processes, real signals, a real state file. */
const dir = tempDir();
const snapshot = join(dir, 'snapshot.msgpack');
const keys = join(dir, 'keys.json');
const now = Math.floor(Date.now() / 1000);
writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 100, seed: 2, now }), now));
writeFileSync(keys, JSON.stringify({ keys: [{ key: 'five', limits: { per_window: null, daily: 5 } }] }));

async function serve(state: string): Promise<{ child: Child; port: string }> {
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--state', state]);
  await untilReady(port);
  return { child, port };
}
const ask = async (port: string) => (await fetch(`http://127.0.0.1:${port}/api?key=five&count=1`)).status;

/** Starts again on the same state: 2 more requests of the 5 a day, then 429. */
async function restartHasTwoLeft(state: string): Promise<void> {
  const { child, port } = await serve(state);
  try {
    assert.is(await ask(port), 200);
    assert.is(await ask(port), 200);
    assert.is(await ask(port), 429);
  } finally {
    child.proc.kill('SIGTERM');
    await exitWithin(child, 15000);
  }
}

const test = suite('usage across restarts');

test('SIGTERM saves the day: 3 requests, restart, 2 more accepted, then 429 (the state folder made at start)', async () => {
  const state = join(dir, 'not', 'yet', 'term.json');
  const { child, port } = await serve(state);
  for (let i = 0; i < 3; i++) assert.is(await ask(port), 200);
  child.proc.kill('SIGTERM');
  assert.is(await exitWithin(child, 15000), 0);
  await restartHasTwoLeft(state);
});

test('SIGKILL after the 5-second flush loses nothing', async () => {
  const state = join(dir, 'kill.json');
  const { child, port } = await serve(state);
  for (let i = 0; i < 3; i++) assert.is(await ask(port), 200);
  await eventually(() => existsSync(state) && readFileSync(state, 'utf8').includes('"count":3'), 7000, 'the flush');
  child.proc.kill('SIGKILL');
  await exitWithin(child, 15000);
  await restartHasTwoLeft(state);
});

test('a corrupt state file is set aside, and the server starts and serves', async () => {
  const state = join(dir, 'corrupt.json');
  writeFileSync(state, '{"version":1,"day":');
  const { child, port } = await serve(state);
  try {
    assert.is(await ask(port), 200);
    assert.match(child.stdout(), '"event":"state_corrupt"');
    assert.ok(readdirSync(dir).some((f) => f.startsWith('corrupt.json.corrupt-')), 'set aside');
  } finally {
    child.proc.kill('SIGTERM');
    assert.is(await exitWithin(child, 15000), 0);
  }
  assert.match(readFileSync(state, 'utf8'), '"count":1', 'saved anew at stop');
});

test.run();
