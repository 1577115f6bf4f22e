/**
 * The Redis client of the limiter, chosen by measure: the service's own RESP
 * connection against ioredis 6 with auto-pipelining (which has Cluster and
 * Sentinel built in). Each sends bursts of 64 admissions (FCALL of the
 * limiter's function, one key each) every 16 ms to one real redis-server for
 * 10 s, the two alternating, 3 rounds; the latency of every call.
 * Run: npm run bench -- redis-clients
 */
import { Redis } from 'ioredis';
import { RedisConnection } from '../src/access/redis-connection.js';
import { FUNCTION_NAME, LIBRARY, keysOf } from '../src/access/redis-function.js';
import { RedisServer } from '../support/redis.js';
import { median, round2, sleep, writeResult } from './harness.js';

const BURST = 64;
const EVERY_MS = 16;
const SECONDS = 10;
const ROUNDS = 3;
const TIMEOUT_MS = 100;
const ids = Array.from({ length: 10_000 }, (_, i) => i.toString(16).padStart(64, '0'));
/** 2 per 5 s, the day's default, 10 subnets, no deadline: the arguments of an admission. */
const args = (i: number) => ['FCALL', FUNCTION_NAME, '3', ...keysOf(ids[i % ids.length]), '2', '5000', '34560', '10', String(i % 65536), '-1'];

type Call = (command: string[]) => Promise<unknown>;

async function burstRun(call: Call): Promise<{ calls: number; errors: number; p50_ms: number; p99_ms: number; max_ms: number }> {
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const until = performance.now() + SECONDS * 1000;
  const pending: Promise<void>[] = [];
  while (performance.now() < until) {
    for (let b = 0; b < BURST; b++) {
      const began = performance.now();
      pending.push(call(args(n++)).then(() => void latencies.push(performance.now() - began), () => void errors++));
    }
    await sleep(EVERY_MS);
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  const at = (p: number) => round2(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]);
  return { calls: latencies.length, errors, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: round2(latencies[latencies.length - 1]) };
}

const redis = await RedisServer.start();
try {
  const own = new RedisConnection({ url: redis.url, timeoutMs: TIMEOUT_MS });
  const ready = new Promise((resolve) => own.once('ready', resolve));
  own.connect();
  await ready;
  await own.call(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY]);
  const io = new Redis(redis.url, { enableAutoPipelining: true, enableOfflineQueue: false, commandTimeout: TIMEOUT_MS, lazyConnect: true });
  await io.connect();
  const contenders: Array<{ name: string; call: Call }> = [
    { name: 'own RESP connection', call: (c) => own.call(c) },
    { name: 'ioredis 6, auto-pipelining', call: (c) => io.call(c[0], ...c.slice(1)) },
  ];
  const rounds = new Map(contenders.map((c) => [c.name, [] as Awaited<ReturnType<typeof burstRun>>[]]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of contenders) {
      const result = await burstRun(c.call);
      rounds.get(c.name)!.push(result);
      console.error(`round ${r + 1} ${c.name}: ${JSON.stringify(result)}`);
    }
  }
  const summary = contenders.map((c) => {
    const rs = rounds.get(c.name)!;
    return { client: c.name, p50_ms: median(rs.map((x) => x.p50_ms)), p99_ms: median(rs.map((x) => x.p99_ms)), rounds: rs };
  });
  writeResult('redis-clients', { date: new Date().toISOString(), burst: BURST, every_ms: EVERY_MS, seconds: SECONDS, summary });
  own.close();
  io.disconnect();
} finally {
  await redis.close();
}
