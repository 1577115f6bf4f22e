/**
 * What GET /usage costs Redis (docs/several-instances.md): one instance with
 * --limiter redis:// and 10,000 limited keys, each used once; then /usage
 * asked 20 times. Reported: the time of each answer, the read-only FCALLs
 * each one made and the microseconds Redis spent on them (INFO
 * commandstats), and whether any KEYS or SCAN ran. Redis on core 1, the
 * instance on core 0.
 * Run: npm run bench -- usage-cost
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { freePorts } from '../support/ports.js';
import { CLI, LOAD_CORE, generateSnapshot, median, round2, sleep, startPinned, stop, waitFor, writeResult } from './harness.js';

const KEYS = 10_000;
const CALLS = 20;
const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-usage-'));
const [redisPort, port] = await freePorts(2);
const redis = spawn('taskset', ['-c', LOAD_CORE, 'redis-server', '--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
try {
  const snapshot = join(work, 'snapshot.msgpack');
  const keysFile = join(work, 'keys.json');
  generateSnapshot(snapshot, 1000, Math.floor(Date.now() / 1000), 1);
  const keys = Array.from({ length: KEYS }, (_, i) => `usage-key-${i}`);
  writeFileSync(keysFile, JSON.stringify({ keys: keys.map((key) => ({ key, name: key, limits: { per_window: 2, window_s: 5, daily: 34560, subnets: 10 } })) }), { mode: 0o600 });
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keysFile, '--port', String(port), '--host', '127.0.0.1', '--limiter', `redis://127.0.0.1:${redisPort}`, '--log-level', 'warn']);
  const client = createClient({ url: `redis://127.0.0.1:${redisPort}` });
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 60_000, (s) => s === 200);
    await client.connect();
    // Every key used once, so that each has a day's count and a subnet in Redis.
    for (let i = 0; i < KEYS; i += 100) await Promise.all(keys.slice(i, i + 100).map(async (key) => (await fetch(`http://127.0.0.1:${port}/api?key=${key}&count=1`)).arrayBuffer()));
    const stats = async (): Promise<Record<string, { calls: number; usec: number }>> => {
      const text = await client.sendCommand(['INFO', 'commandstats']) as string;
      return Object.fromEntries([...text.matchAll(/^cmdstat_([a-z_|]+):calls=(\d+),usec=(\d+)/gm)].map((m) => [m[1], { calls: Number(m[2]), usec: Number(m[3]) }]));
    };
    const before = await stats();
    const times: number[] = [];
    let counted = 0;
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const doc = await (await fetch(`http://127.0.0.1:${port}/usage`)).json() as { keys: Array<{ today: number | null }> };
      times.push(performance.now() - t0);
      counted = doc.keys.filter((k) => k.today === 1).length;
      await sleep(50);
    }
    const after = await stats();
    const delta = (name: string) => ({ calls: (after[name]?.calls ?? 0) - (before[name]?.calls ?? 0), usec: (after[name]?.usec ?? 0) - (before[name]?.usec ?? 0) });
    const ro = delta('fcall_ro');
    writeResult('usage-cost', {
      date: new Date().toISOString(),
      keys: KEYS,
      keys_counted_once: counted,
      usage_ms_median: round2(median(times)),
      usage_ms_max: round2(Math.max(...times)),
      redis_fcall_ro_per_usage: ro.calls / CALLS,
      redis_usec_per_usage: Math.round(ro.usec / CALLS),
      redis_usec_per_key: round2(ro.usec / ro.calls),
      keys_or_scan_calls: delta('keys').calls + delta('scan').calls,
    });
  } finally {
    await client.quit().catch(() => undefined);
    await stop(server);
  }
} finally {
  redis.kill('SIGTERM');
  await new Promise((r) => (redis.exitCode !== null ? r(null) : redis.once('exit', r)));
  rmSync(work, { recursive: true, force: true });
}
