import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { exitWithin, freePorts, needCommand, runCli, spawnGroup, stopGroup, untilReady } from '../helpers/cli.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * --limiter rediss://: the instance reaches a redis-server that speaks only
 * TLS, verifying its certificate against the system's authorities and
 * NODE_EXTRA_CA_CERTS (docs/several-instances.md). The certificates are made with openssl.
 */
const test = suite('the Redis limiter over TLS');

test('a rediss:// limiter counts through TLS, and refuses a certificate it cannot verify', async () => {
  needCommand('redis-server', 'redis-server');
  const dir = tempDir();
  const file = (name: string) => join(dir, name);
  const redisPair = new TestAuthority(dir).issue('redis');

  const [tlsPort, trusting, doubting] = await freePorts(3);
  const redis = spawnGroup('redis-server', ['--port', '0', '--tls-port', String(tlsPort), '--bind', '127.0.0.1', '--tls-cert-file', redisPair.cert, '--tls-key-file', redisPair.key,
    '--tls-ca-cert-file', file('ca.pem'), '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir]);
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(file('snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 50, seed: 94, now }), now));
  writeFileSync(file('keys.json'), JSON.stringify({ keys: [{ key: 'two-per-5', limits: { per_window: 2, window_s: 5, daily: null, subnets: null } }] }));
  const serve = (port: number, env: NodeJS.ProcessEnv) => runCli(['serve', '--snapshot', file('snapshot.msgpack'), '--keys', file('keys.json'), '--port', String(port), '--host', '127.0.0.1',
    '--limiter', `rediss://localhost:${tlsPort}`, '--drain-s', '0'], env);
  const children = [serve(trusting, { NODE_EXTRA_CA_CERTS: file('ca.pem') }), serve(doubting, {})];
  try {
    await Promise.all([trusting, doubting].map((p) => untilReady(p, 15_000)));
    const limiter = async (port: number) => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { limiter: { up: boolean; last_error: string | null } }).limiter;
    await eventually(async () => (await limiter(trusting)).up, 10_000, 'connected over TLS');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${trusting}/api?key=two-per-5&count=1`)).status);
    assert.equal(statuses, [200, 200, 429]);

    await eventually(async () => (await limiter(doubting)).last_error !== null, 10_000, 'a refused certificate');
    const doubted = await limiter(doubting);
    assert.is(doubted.up, false);
    assert.match(doubted.last_error!, /certificate/i);
    assert.is((await fetch(`http://127.0.0.1:${doubting}/api?key=two-per-5&count=1`)).status, 503);
  } finally {
    for (const c of children) c.proc.kill('SIGTERM');
    await Promise.all(children.map((c) => exitWithin(c, 15_000).catch(() => null)));
    await stopGroup(redis);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
