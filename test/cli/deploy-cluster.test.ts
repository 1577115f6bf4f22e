import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePort, needCommand, runCli, untilReady } from '../helpers/cli.js';
import { StaticOrigin } from '../helpers/nginx.js';
import { RedisServer } from '../../support/redis.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * deploy/proxylist@.service with deploy/cluster.env starts an instance as
 * written: the instance name as its port, the snapshot from the origin, the
 * limits in Redis (their addresses moved to the test's own nginx and Redis).
 */
const read = (name: string) => readFileSync(fileURLToPath(new URL(`../../../deploy/${name}`, import.meta.url)), 'utf8');
const unit = read('proxylist@.service');
const settings = (name: string): string[] => unit.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));
const envFile = Object.fromEntries(read('cluster.env').split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

const test = suite('deploy/proxylist@.service and cluster.env');

test('an instance started as the template says serves from the origin, limited through Redis, and drains on SIGTERM', async () => {
  const dir = tempDir();
  const origin = await StaticOrigin.start();
  const redis = await RedisServer.start();
  try {
    const now = Math.floor(Date.now() / 1000);
    writeFileAtomic(join(origin.root, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 100, seed: 97, now }), now));
    writeFileSync(join(origin.root, 'keys.json'), JSON.stringify({ keys: [{ key: 'k', limits: { per_window: 1, window_s: 60, daily: null, subnets: null } }] }));
    assert.match(envFile.PROXYLIST_SNAPSHOT, /^http:\/\/127\.0\.0\.1:\d+\/snapshot\.msgpack$/);
    assert.match(envFile.PROXYLIST_KEYS, /^http:\/\/127\.0\.0\.1:\d+\/keys\.json$/);
    assert.match(envFile.PROXYLIST_LIMITER, /^redis:\/\/127\.0\.0\.1:6379$/);
    const port = await freePort();
    const env: Record<string, string> = {
      ...envFile,
      PROXYLIST_SNAPSHOT: origin.url('snapshot.msgpack'),
      PROXYLIST_KEYS: origin.url('keys.json'),
      PROXYLIST_LIMITER: redis.url,
      PROXYLIST_DRAIN_S: '1',
    };
    for (const assignment of settings('Environment')) {
      const [name, value] = assignment.split('=');
      env[name] = value.replace('%i', port);
    }
    assert.is(env.PROXYLIST_PORT, port, 'the instance name is its port');
    const exec = settings('ExecStart')[0].split(/\s+/);
    assert.equal(exec.slice(0, 2), ['/usr/bin/env', 'proxylist']);
    const child = runCli(exec.slice(2), env);
    try {
      await untilReady(port, 15_000);
      const ask = async () => (await fetch(`http://127.0.0.1:${port}/api?key=k&count=1`)).status;
      await eventually(async () => (await ask()) !== 503, 10_000, 'the limiter connected');
      assert.is(await ask(), 429, 'the second request of a 1-per-60-s key, counted in Redis');
      child.proc.kill(settings('KillSignal')[0] as NodeJS.Signals);
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 503, 10_000, 'draining');
      assert.is(await exitWithin(child, Number(settings('TimeoutStopSec')[0]) * 1000), 0);
    } finally {
      child.proc.kill('SIGKILL');
    }
  } finally {
    await origin.close();
    await redis.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('deploy/origin.nginx.conf serves the snapshot and the keys file with ETags, and nothing else', async () => {
  needCommand('nginx', 'nginx-light');
  const dir = tempDir();
  const root = join(dir, 'origin');
  mkdirSync(root);
  mkdirSync(join(dir, 'logs'));
  writeFileSync(join(root, 'keys.json'), '{"keys":[]}');
  writeFileSync(join(root, 'snapshot.msgpack'), 'x');
  writeFileSync(join(root, 'other.txt'), 'x');
  const port = await freePort();
  const server = read('origin.nginx.conf').replace('127.0.0.1:8070', `127.0.0.1:${port}`).replace('root /srv/proxylist/origin;', `root ${root};`);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, t)};`).join(' ');
  writeFileSync(join(dir, 'nginx.conf'), `daemon off; ${process.getuid?.() === 0 ? 'user root;' : ''} pid ${join(dir, 'nginx.pid')}; error_log ${join(dir, 'logs', 'error.log')};
events { worker_connections 16; }
http { ${temp} ${server} }`);
  const nginx = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs', 'error.log')], { stdio: 'ignore' });
  try {
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${base}/keys.json`).catch(() => null)) !== null, 10_000, 'nginx');
    const keys = await fetch(`${base}/keys.json`);
    assert.is(keys.status, 200);
    const etag = keys.headers.get('etag');
    assert.ok(etag);
    assert.is((await fetch(`${base}/keys.json`, { headers: { 'if-none-match': etag! } })).status, 304);
    assert.is((await fetch(`${base}/snapshot.msgpack`)).status, 200);
    assert.is((await fetch(`${base}/other.txt`)).status, 404);
  } finally {
    nginx.kill('SIGQUIT');
    await new Promise((r) => (nginx.exitCode !== null ? r(null) : nginx.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
