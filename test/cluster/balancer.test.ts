import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePorts, runCli, untilReady } from '../helpers/cli.js';
import { haproxyConfig, startHaproxy } from '../helpers/haproxy.js';
import { RedisServer } from '../../support/redis.js';
import { defaultThreadsHere, eventually, tempDir, testEngine } from '../helpers/server.js';

/**
 * Three instances behind haproxy with the configuration of deploy/ (its
 * ports moved to free ones), sharing one Redis: an instance stopped with
 * SIGTERM under load drains (docs/several-instances.md) and no request fails at the client.
 */
const test = suite('deploy/haproxy.cfg in front of three instances');

test('SIGTERM to one instance under load: it drains, and no request is lost', async () => {
  const dir = tempDir();
  const redis = await RedisServer.start();
  const [lb, ...ports] = await freePorts(4);
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 2000, seed: 95, now }), now));
  writeFileSync(keys, JSON.stringify({ keys: [{ key: 'k', limits: { per_window: 100000, window_s: 1, daily: null, subnets: 10 } }] }));
  const instances = ports.map((port) => runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--limiter', redis.url, '--trust-proxy', '127.0.0.1']));
  // Plain HTTP at the front: this is about draining, not TLS (https-balancer.test.ts).
  const haproxy = startHaproxy(dir, haproxyConfig({ front: lb, instances: ports }));
  try {
    await Promise.all(ports.map((p) => untilReady(p)));
    // Not ready in time: the last answer says which (haproxy's 503 with no instance up, or an instance's limiter).
    let last = 'no answer';
    const ready = async () => {
      const res = await fetch(`http://127.0.0.1:${lb}/api?key=k&count=1`).catch(() => null);
      last = res ? `${res.status} ${(await res.text()).slice(0, 200)}` : 'no answer';
      return res?.status === 200;
    };
    await eventually(ready, 10_000, 'haproxy and the limiter ready').catch((err: Error) => {
      throw new Error(`${err.message}; the last answer: ${last}`);
    });

    let served = 0;
    const failures: string[] = [];
    const servedBy = new Set<string>();
    const until = performance.now() + 10_000;
    const client = async () => {
      while (performance.now() < until) {
        try {
          const res = await fetch(`http://127.0.0.1:${lb}/api?key=k&count=5`);
          const body = await res.text();
          if (res.status === 200 && body.split('\n').length === 6) served++;
          else failures.push(`${res.status} ${body.slice(0, 80)}`);
          servedBy.add(res.headers.get('etag') ?? '');
        } catch (err) {
          failures.push(String(err));
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, client));
    await new Promise((r) => setTimeout(r, 2000));
    const stoppedAt = performance.now();
    instances[0].proc.kill('SIGTERM');
    // The signal is handled within a moment: from then on /health says draining.
    let health: unknown = null;
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${ports[0]}/health`);
      health = await res.json();
      return res.status === 503;
    }, 10_000, 'draining');
    const { keys: keysHealth, engine_build: _build, ...rest } = health as { keys: { count: number; last_error: string | null }; engine_build: unknown };
    assert.equal(rest, { status: 'draining', engine: testEngine().name, threads: defaultThreadsHere(), limiter: { kind: 'redis', mode: 'single', nodes: 1, up: true, fallback: 0, last_error: null } });
    assert.equal([keysHealth.count, keysHealth.last_error], [1, null]);
    const code = await exitWithin(instances[0], 20_000);
    const drainedMs = performance.now() - stoppedAt;
    await load;
    assert.is(code, 0);
    assert.ok(drainedMs >= 5000, `stopped ${Math.round(drainedMs)} ms after SIGTERM: it drained first`);
    assert.equal(failures, [], `${failures.length} failed of ${served + failures.length}`);
    assert.ok(served > 100, `${served} requests served`);
  } finally {
    for (const c of instances) c.proc.kill('SIGKILL');
    await Promise.all([...instances.map((c) => c.exited), haproxy.stop()]);
    await redis.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
