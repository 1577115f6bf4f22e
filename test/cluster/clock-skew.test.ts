import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { CLI, freePorts, spawnGroup, stopGroup, untilReady } from '../helpers/cli.js';
import { fakeTimeEnv } from '../../support/commands.js';
import { RedisServer } from '../../support/redis.js';
import { tempDir } from '../helpers/server.js';

/**
 * Two instances whose clocks disagree by 6 s (run with libfaketime at -3 s
 * and +3 s) share one Redis: the limits hold, because their times come
 * from Redis (docs/several-instances.md).
 */
const test = suite('clock skew between instances');

test('instances at -3 s and +3 s: never more than 2 in any 5 s, and the daily limit exact', async () => {
  const dir = tempDir();
  const redis = await RedisServer.start();
  const now = Math.floor(Date.now() / 1000);
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 200, seed: 92, now }), now));
  writeFileSync(keys, JSON.stringify({
    keys: [
      { key: 'two-per-5', limits: { per_window: 2, window_s: 5, daily: null, subnets: null } },
      { key: 'three-a-day', limits: { per_window: null, daily: 3, subnets: null } },
    ],
  }));
  const ports = await freePorts(2);
  const children = ['-3', '+3'].map((offset, i) =>
    spawnGroup(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(ports[i]), '--host', '127.0.0.1', '--limiter', redis.url, '--drain-s', '0'], fakeTimeEnv(offset)));
  try {
    // An instance that is not ready says why: what it printed.
    await Promise.all(ports.map((p, i) => untilReady(p, 15_000).catch((err: Error) => {
      throw new Error(`${err.message} (the instance at ${i ? '+3' : '-3'} s printed: ${children[i].output() || 'nothing'})`);
    })));
    const ask = async (i: number, key: string) => {
      const res = await fetch(`http://127.0.0.1:${ports[i % 2]}/api?key=${key}&count=1`);
      await res.arrayBuffer();
      return res.status;
    };
    // The clocks really disagree: each instance's Date is its offset from this process's, between the
    // request and its answer, less up to 2 s (whole seconds, and a date uWebSockets.js writes once a second).
    for (const [i, offset] of [-3, 3].entries()) {
      const sent = Date.now();
      const date = Date.parse((await fetch(`http://127.0.0.1:${ports[i]}/health`)).headers.get('date')!);
      const received = Date.now();
      assert.ok(date >= sent + offset * 1000 - 2500 && date <= received + offset * 1000 + 500, `instance ${i}: its Date is ${date - sent} ms from this process's at the request, not about ${offset * 1000}`);
    }
    // Each instance's limiter connects in the background: wait until both say it is up, then for the first admission.
    const deadline = Date.now() + 10_000;
    const limiterUp = async (port: number) => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { limiter?: { up?: boolean } }).limiter?.up === true;
    for (const port of ports) while (!(await limiterUp(port)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    while ((await ask(0, 'three-a-day')) === 503 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const daily = [];
    for (let i = 1; i < 6; i++) daily.push(await ask(i, 'three-a-day'));
    assert.equal(daily, [200, 200, 429, 429, 429], 'the 4th request of the day, on either instance, is refused');

    const accepted: number[] = [];
    const started = performance.now();
    for (let i = 0; performance.now() - started < 8000; i++) {
      const sent = performance.now();
      const status = await ask(i, 'two-per-5');
      if (status === 200) accepted.push(sent);
      else assert.is(status, 429);
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(accepted.length >= 2, `${accepted.length} accepted`);
    for (let i = 0; i + 2 < accepted.length; i++) assert.ok(accepted[i + 2] - accepted[i] >= 4900, `3 accepted within ${Math.round(accepted[i + 2] - accepted[i])} ms`);
  } finally {
    await Promise.all(children.map((c) => stopGroup(c)));
    await redis.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
