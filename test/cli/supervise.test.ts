import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePort, runCli, untilReady } from '../helpers/cli.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * Failures outside any request, planted in a real server process by a module
 * preloaded with --import and set off by SIGUSR2 once the server is ready
 * (not by a timer, which a slow start could outrun): an uncaught exception is
 * logged, the usage state saved, and the process exits 1; an unhandled
 * rejection is logged and the server keeps serving.
 */
const dir = tempDir();
const snapshot = join(dir, 'snapshot.msgpack');
const keys = join(dir, 'keys.json');
const now = Math.floor(Date.now() / 1000);
writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 50, seed: 6, now }), now));
writeFileSync(keys, JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null } }] }));

async function serveWith(planted: string, state: string) {
  const port = await freePort();
  const child = runCli(
    ['serve', '--snapshot', snapshot, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--state', state],
    { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(planted)}` },
  );
  await untilReady(port);
  return { child, base: `http://127.0.0.1:${port}` };
}

const test = suite('the process around the server');

test('an uncaught exception: logged as fatal, usage saved, exit 1', async () => {
  const state = join(dir, 'uncaught.json');
  const { child, base } = await serveWith('process.on("SIGUSR2", () => setImmediate(() => { throw new Error("planted failure") }))', state);
  assert.is((await fetch(`${base}/api?key=k&count=1`)).status, 200);
  child.proc.kill('SIGUSR2');
  assert.is(await exitWithin(child, 10_000), 1);
  const fatal = child.stdout().split('\n').find((l) => l.includes('"event":"uncaught_exception"'));
  assert.ok(fatal, child.stdout());
  assert.match(fatal!, 'planted failure');
  assert.ok(existsSync(state), 'the state was saved before exiting');
  assert.match(readFileSync(state, 'utf8'), '"count":1');
});

test('an unhandled rejection: logged, and the server keeps serving until stopped', async () => {
  const { child, base } = await serveWith('process.on("SIGUSR2", () => { Promise.reject(new Error("planted rejection")) })', join(dir, 'rejection.json'));
  child.proc.kill('SIGUSR2');
  await eventually(() => child.stdout().includes('"event":"unhandled_rejection"'), 10_000, 'the rejection logged');
  assert.match(child.stdout(), 'planted rejection');
  assert.is((await fetch(`${base}/api?key=k&count=1`)).status, 200);
  child.proc.kill('SIGTERM');
  assert.is(await exitWithin(child, 15_000), 0);
});

test.run();
