import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { sha256Hex } from '../../src/access/keys.js';
import { keysOf } from '../../src/access/redis-function.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePorts, runCli, untilReady } from '../helpers/cli.js';
import { RedisServer } from '../../support/redis.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * A refusal costs nothing (docs/several-instances.md): a request answered 503
 * because Redis did not answer within --limiter-timeout-ms is never counted,
 * even when Redis, frozen meanwhile, runs the command it had been sent once
 * it wakes up. Redis is frozen with SIGSTOP: four times 400 ms, and once 6 s
 * (past that, the instance gives the connection up and makes a new one).
 */
test('Redis stopped and resumed around requests: the day count in Redis equals the requests answered 200', async () => {
  const dir = tempDir();
  const redis = await RedisServer.start();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 300, seed: 5, now }), now));
  writeFileSync(keys, JSON.stringify({ keys: [{ key: 'counted', limits: { per_window: 100_000, window_s: 1, daily: 1_000_000, subnets: 10 } }] }));
  const [port] = await freePorts(1);
  const server = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--limiter', redis.url, '--drain-s', '0']);
  const admin = createClient({ url: redis.url });
  try {
    await untilReady(port);
    const api = `http://127.0.0.1:${port}/api?key=counted&count=1`;
    await eventually(async () => (await fetch(api)).status === 200, 10_000, 'the limiter up');
    const statuses = new Map<number, number>([[200, 1]]);
    let running = true;
    const client = async () => {
      while (running) {
        const res = await fetch(api);
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    };
    const clients = Array.from({ length: 8 }, client);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    for (const frozenMs of [400, 400, 6000, 400, 400]) {
      await sleep(500);
      redis.pause();
      await sleep(frozenMs);
      redis.resume();
    }
    await sleep(1500);
    running = false;
    await Promise.all(clients);
    // Late replies and their undoing have been sent by now; give Redis a moment to run them.
    await sleep(500);
    await admin.connect();
    const counted = Number(await admin.hGet(keysOf(sha256Hex('counted'))[1], 'n'));
    assert.ok((statuses.get(503) ?? 0) > 0, `no request was answered 503: ${JSON.stringify([...statuses])}`);
    assert.is(counted, statuses.get(200), `Redis counted ${counted}; answers: ${JSON.stringify([...statuses])}`);
  } finally {
    await admin.close().catch(() => undefined);
    server.proc.kill('SIGTERM');
    await exitWithin(server, 15_000);
    await redis.close();
  }
});

test.run();
