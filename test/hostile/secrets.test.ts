import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePorts, runCli, untilReady } from '../helpers/cli.js';
import { StaticOrigin } from '../helpers/nginx.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * Secrets stay secret (docs/operations.md, Memory, hostile clients and secrets): an origin URL with credentials and a
 * token downloads (the credentials go as an Authorization header), and
 * neither they nor a Redis password appear in /health, /metrics or the log.
 */
const PASSWORD = 'origin-pass-7f3a';
const TOKEN = 'token-91c2';
const REDIS_PASSWORD = 'redis-pass-5e8d';

test('an origin URL with credentials and a token downloads, and no secret is shown anywhere', async () => {
  const origin = await StaticOrigin.start({ user: 'checker', password: PASSWORD });
  const dir = tempDir();
  const keys = join(dir, 'keys.json');
  writeFileSync(keys, JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }));
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(join(origin.root, 'snapshot.msgpack'), encodeSnapshot(generateRecords({ records: 200, seed: 3, now }), now));
  // Without the credentials, the origin refuses.
  assert.is((await fetch(origin.url('snapshot.msgpack'))).status, 401);
  const [port, closedPort] = await freePorts(2);
  const url = `http://checker:${PASSWORD}@127.0.0.1:${origin.port}/snapshot.msgpack?token=${TOKEN}`;
  // The Redis URL's password on the command line, to a port where no Redis listens: it shows up in the errors it causes.
  const server = runCli(['serve', '--snapshot', url, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0', '--limiter', `redis://:${REDIS_PASSWORD}@127.0.0.1:${closedPort}`]);
  try {
    await untilReady(port);
    const base = `http://127.0.0.1:${port}`;
    assert.is((await fetch(`${base}/api?key=k&count=1`)).status, 200);
    await eventually(() => server.stdout().includes('limiter'), 10_000, 'the limiter logged');
    // A failing download too, whose error is shown.
    writeFileSync(join(origin.root, 'fail'), '');
    await eventually(async () => (await (await fetch(`${base}/health`)).text()).includes('500'), 10_000, 'the failure in /health');
    const health = await (await fetch(`${base}/health`)).text();
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(health, `127.0.0.1:${origin.port}/snapshot.msgpack?token=***`);
    for (const [where, text] of [['/health', health], ['/metrics', metrics], ['the log', server.stdout() + server.stderr()]]) {
      for (const secret of [PASSWORD, TOKEN, REDIS_PASSWORD]) assert.not.ok(text.includes(secret), `${where} shows ${secret}`);
    }
    assert.match(server.stdout(), 'secret_on_command_line');
    assert.ok(origin.statuses('snapshot.msgpack?token=' + TOKEN).includes(200), 'nginx served the file');
  } finally {
    server.proc.kill('SIGTERM');
    await exitWithin(server, 15_000);
    await origin.close();
  }
});

test.run();
