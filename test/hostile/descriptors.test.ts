import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { CLI, freePorts, needCommand, untilReady } from '../helpers/cli.js';
import { cpuSeconds } from '../../support/process-stats.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * File descriptors run out (docs/operations.md, Memory, hostile clients and secrets): a server limited to 64
 * descriptors, and 120 idle connections. Accepting fails once none is left;
 * the server must say so once and back off, not spin, and accept again once
 * connections close.
 */
test('with the descriptors used up: one log line, no spinning, and connections accepted again once some close', async () => {
  needCommand('prlimit', 'util-linux');
  const dir = tempDir();
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 200, seed: 4, now }), now));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }));
  const [port] = await freePorts(1);
  const server = spawn('prlimit', ['--nofile=64:64', process.execPath, CLI, 'serve', '--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stdout!.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const sockets: Socket[] = [];
  try {
    await untilReady(port);
    for (let i = 0; i < 120; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    const before = cpuSeconds(server.pid!);
    await new Promise((r) => setTimeout(r, 4000));
    const cpu = cpuSeconds(server.pid!) - before;
    assert.ok(cpu < 0.5, `${cpu.toFixed(2)} CPU-s in 4 s with the descriptors used up`);
    assert.is(log.split('"event":"accept_paused"').length - 1, 1, 'one log line for the episode');
    for (const s of sockets) s.destroy();
    await eventually(() => log.includes('"event":"accept_resumed"'), 10_000, 'accepting again');
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=k&count=1`)).status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    server.kill('SIGTERM');
    await exited;
  }
});

test.run();
