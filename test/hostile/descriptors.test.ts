import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { CLI, freePorts, needCommand, untilReady } from '../helpers/cli.js';
import { cpuSeconds } from '../../support/process-stats.js';
import { eventually, tempDir, testEngine } from '../helpers/server.js';
import { TestAuthority } from '../../support/certificates.js';

/**
 * File descriptors run out (docs/operations.md, Memory, hostile clients and secrets): a server limited to 128
 * descriptors, and 200 idle connections. Accepting fails once none is left;
 * the server must say so once and back off, not spin, and accept again once
 * connections close. Node's module loader opens a thread's modules all at
 * once, so a start needs about 60 descriptors whatever the limit: the limit
 * leaves room for that, and one serving thread keeps it so on any machine.
 */
test('with the descriptors used up: one log line, no spinning, and connections accepted again once some close', async () => {
  needCommand('prlimit', 'util-linux');
  const dir = tempDir();
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 200, seed: 4, now }), now));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }));
  const [port] = await freePorts(1);
  const server = spawn('prlimit', ['--nofile=128:128', process.execPath, CLI, 'serve', '--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0', '--threads', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stdout!.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const sockets: Socket[] = [];
  try {
    await untilReady(port);
    for (let i = 0; i < 200; i++) {
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

/** The status of GET /health on a new connection, or null when none comes within 2 s. */
function healthStatus(port: number, ca: Buffer | null): Promise<number | null> {
  return new Promise((resolve) => {
    const o = { host: '127.0.0.1', port, path: '/health', timeout: 2000, agent: false as const };
    const req = (ca ? httpsGet({ ...o, ca, servername: 'localhost' }, answered) : httpGet(o, answered));
    function answered(res: IncomingMessage): void {
      res.resume();
      resolve(res.statusCode ?? null);
    }
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

/**
 * An attacker's connections take every descriptor (docs/operations.md,
 * Memory, hostile clients and secrets): 560 slowloris connections (a header
 * line every 5 s) against 512 descriptors, or 560 TCP connections to the
 * TLS port that never send a byte, held for as long as the test runs. The
 * head and handshake timeouts go on while accepting is paused: the
 * attacker's connections close, and /health answers again within 25 s.
 */
// uWebSockets.js v20.57 times no connection out (docs/operations.md, What each build answers): the test after this one.
const engine = testEngine();
/** The build closes no connection for being idle or slow: v20.57. */
const noTimeouts = engine.name === 'uws' && engine.refusesBadHeads;

if (!noTimeouts) test('560 slowloris connections, or 560 silent ones on the TLS port, against 512 descriptors: /health answers again within 25 s', async () => {
  needCommand('prlimit', 'util-linux');
  for (const secure of [false, true]) {
    const dir = tempDir();
    const now = Math.floor(Date.now() / 1000);
    writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 200, seed: 5, now }), now));
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }));
    const authority = secure ? new TestAuthority(dir) : null;
    const pair = authority?.issue('server');
    const ca = authority ? readFileSync(authority.ca) : null;
    const [port] = await freePorts(1);
    const tls = pair ? ['--tls-cert', pair.cert, '--tls-key', pair.key] : [];
    const server = spawn('prlimit', ['--nofile=512:512', process.execPath, CLI, 'serve', '--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0', '--threads', '2', ...tls], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    server.stdout!.on('data', (d) => (log += d));
    const exited = new Promise((resolve) => server.on('exit', resolve));
    const sockets: Socket[] = [];
    let drip: NodeJS.Timeout | undefined;
    try {
      await eventually(async () => (await healthStatus(port, ca)) === 200, 30_000, 'ready');
      for (let i = 0; i < 560; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => undefined);
        if (!secure) s.on('connect', () => s.write('GET /health HTTP/1.1\r\nHost: localhost\r\n'));
        sockets.push(s);
      }
      if (!secure) drip = setInterval(() => { for (const s of sockets) if (s.writable) s.write('X-Slow: 1\r\n'); }, 5000);
      await eventually(() => log.includes('"event":"accept_paused"'), 10_000, 'accepting paused');
      const pausedAt = Date.now();
      let status: number | null = null;
      while (status !== 200 && Date.now() - pausedAt < 25_000) {
        status = await healthStatus(port, ca);
        if (status !== 200) await new Promise((r) => setTimeout(r, 250));
      }
      console.log(`  ${secure ? 'TLS, silent' : 'plain, slowloris'}: /health ${status} ${((Date.now() - pausedAt) / 1000).toFixed(1)} s after accepting paused`);
      assert.is(status, 200, `${secure ? 'TLS' : 'plain'}: /health within 25 s of the pause, the attacker still there`);
    } finally {
      clearInterval(drip);
      for (const s of sockets) s.destroy();
      server.kill('SIGTERM');
      await exited;
    }
  }
});

if (noTimeouts) {
  test('uWebSockets.js v20.57 keeps a silent connection, a head that never ends and an idle keep-alive past 10 s, as the docs say', async () => {
    const dir = tempDir();
    const now = Math.floor(Date.now() / 1000);
    writeFileAtomic(join(dir, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 50, seed: 6, now }), now));
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }));
    const [port] = await freePorts(1);
    const server = spawn(process.execPath, [CLI, 'serve', '--snapshot', join(dir, 'snapshot.msgpack'), '--keys', join(dir, 'keys.json'), '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => server.on('exit', resolve));
    const sockets: Socket[] = [];
    try {
      await eventually(async () => (await healthStatus(port, null)) === 200, 30_000, 'ready');
      for (const first of ['', 'GET /health HTTP/1.1\r\nHost: localhost\r\n', 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n']) {
        const s = connect(port, '127.0.0.1', () => s.write(first));
        s.on('error', () => undefined);
        s.on('data', () => undefined);
        sockets.push(s);
      }
      await new Promise((r) => setTimeout(r, 14_000));
      assert.equal(sockets.map((s) => !s.destroyed && !s.readableEnded), [true, true, true], 'silent, head never ended, idle keep-alive: still open');
    } finally {
      for (const s of sockets) s.destroy();
      server.kill('SIGTERM');
      await exited;
    }
  });
}

test.run();
