/**
 * Several instances (docs/several-instances.md), on this machine:
 * - S1: the unlimited-key small-answer mix, one instance with --limiter
 *   redis:// against one with the memory limiter (alternating runs);
 * - S2: 10,000 keys at the default limits (2 per 5 s), the same two
 *   instances: unpaced (most requests beyond the limits) and offered at
 *   4,000 req/s (each key at its limit, some beyond): throughput and p99;
 * - S3: FCALLs per refused request once a key is refused;
 * - S4: three instances behind deploy/haproxy.cfg under the mix, one stopped
 *   with SIGTERM, then one killed with SIGKILL: failed requests at the client;
 * - redis-benchmark of the admission function alone: FCALLs per second one
 *   Redis core takes;
 * - S5: admissions per second (every request one accepted FCALL) of one
 *   instance against one Redis, and against a Cluster of three primaries
 *   (and three replicas) made from deploy/redis-cluster.conf; how the
 *   FCALLs spread over the primaries, and what each costs its primary.
 *   Every Redis shares the load core here, so the Cluster shows its spread
 *   and its cost, not its capacity (docs/several-instances.md).
 * Instances on core 0; wrk, haproxy and Redis on core 1.
 * Run: npm run bench -- cluster
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { FUNCTION_NAME } from '../src/access/redis-function.js';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, CLI, generateSnapshot, LOAD_CORE, median, round2, sleep, startPinned, startWrk, stop, waitFor, writeResult, wrk, type WrkResult } from './harness.js';
import { SMALL_MIX } from './mix.js';

const RECORDS = 100_000;
const RUNS = 3;
const SECONDS = 10;
const LIMITED_KEYS = 10_000;
const ADMIT_KEYS = 2000;
const CLUSTER_CONF = fileURLToPath(new URL('../../deploy/redis-cluster.conf', import.meta.url));
const HAPROXY_CONFIG = fileURLToPath(new URL('../../deploy/haproxy.cfg', import.meta.url));

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-cluster-'));
const children: ChildProcess[] = [];
const pinned = (core: string, command: string, args: string[]) => {
  const child = spawn('taskset', ['-c', core, command, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
};

try {
  const snapshot = join(work, 'snapshot.msgpack');
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, RECORDS, Math.floor(Date.now() / 1000));
  const limited = Array.from({ length: LIMITED_KEYS }, (_, i) => `limited-${i}`);
  // Keys whose every request is admitted: one accepted FCALL each.
  const admitting = Array.from({ length: ADMIT_KEYS }, (_, i) => `admit-${i}`);
  writeFileSync(keys, JSON.stringify({
    keys: [
      { key: BENCH_KEY, limits: { per_window: null, daily: null, subnets: null } },
      ...limited.map((key) => ({ key })),
      ...admitting.map((key) => ({ key, limits: { per_window: null, daily: 1_000_000_000, subnets: null } })),
    ],
  }));
  const [redisPort, memoryPort, redisLimitedPort, lbPort, clusterInstancePort, ...ports] = await freePorts(14);
  const clusterPorts = ports.slice(0, 3);
  const nodePorts = ports.slice(3, 9);
  pinned(LOAD_CORE, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work]);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const serve = (port: number, extra: string[]) => {
    const child = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', ...extra]);
    children.push(child);
    return child;
  };
  serve(memoryPort, []);
  serve(redisLimitedPort, ['--limiter', redisUrl]);
  await Promise.all([memoryPort, redisLimitedPort].map((p) => waitFor(`http://127.0.0.1:${p}/health`, 60_000, (s) => s === 200)));
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  const fcallStats = async () => {
    const m = /cmdstat_fcall:calls=(\d+),usec=(\d+)/.exec(await redis.info('commandstats'));
    return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
  };
  const fcalls = async () => (await fcallStats()).calls;

  // S1: the unlimited key never reaches Redis.
  const mix = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}&${q}`);
  const s1Runs: Record<string, number[]> = { memory: [], redis: [] };
  for (const port of [memoryPort, redisLimitedPort]) wrk(port, mix, 3, work);
  for (let r = 0; r < RUNS; r++) {
    s1Runs.memory.push(wrk(memoryPort, mix, SECONDS, work).rps);
    s1Runs.redis.push(wrk(redisLimitedPort, mix, SECONDS, work).rps);
  }

  // S2: 10,000 keys at the default limits.
  const limitedPaths = limited.map((k) => `/api?key=${k}&type=http&count=100`);
  const s2: Record<string, { unpaced: WrkResult; at_4000: WrkResult }> = {};
  const s2Start = await fcallStats();
  for (const [name, port] of [['memory', memoryPort], ['redis', redisLimitedPort]] as const) {
    const unpaced = wrk(port, limitedPaths, SECONDS, work, { tag: `s2-${name}` });
    await sleep(5000); // every window empties
    const at4000 = wrk(port, limitedPaths, SECONDS, work, { tag: `s2-${name}`, rate: 4000 });
    s2[name] = { unpaced, at_4000: at4000 };
  }
  const s2End = await fcallStats();
  const s2Calls = s2End.calls - s2Start.calls;

  // S3: one key hammered: after its first refusal, refusals are answered from memory until the retry time.
  const before = await fcalls();
  const hammer = wrk(redisLimitedPort, ['/api?key=limited-0&count=1'], 5, work, { tag: 's3', connections: 16 });
  const s3Calls = (await fcalls()) - before;
  const refused = hammer.errors;
  const accepted = hammer.requests - refused;

  // redis-benchmark: the admission function alone, on random keys.
  const bench = execFileSync('taskset', ['-c', LOAD_CORE, 'redis-benchmark', '-p', String(redisPort), '-q', '-c', '50', '-n', '200000', '-r', '1000000',
    'FCALL', FUNCTION_NAME, '3', '{pl:__rand_int__}:w', '{pl:__rand_int__}:d', '{pl:__rand_int__}:n', '2', '5000', '34560', '10', '__rand_int__', '-1']).toString();
  const fcallPerS = Number(/([\d.]+) requests per second/.exec(bench)?.[1] ?? 0);

  // S5: admissions per second, one Redis against a Cluster of three primaries.
  const admitPaths = admitting.map((k) => `/api?key=${k}&type=http&count=10`);
  const singleBefore = await fcallStats();
  const s5Single = wrk(redisLimitedPort, admitPaths, SECONDS, work, { tag: 's5-single' });
  const singleAfter = await fcallStats();
  await redis.close();
  for (const port of nodePorts) {
    const dir = join(work, `node-${port}`);
    mkdirSync(dir);
    pinned(LOAD_CORE, 'redis-server', [CLUSTER_CONF, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'no', '--save', '']);
  }
  await sleep(500);
  execFileSync('redis-cli', ['--cluster', 'create', ...nodePorts.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore' });
  const nodeCli = (port: number, ...command: string[]) => execFileSync('redis-cli', ['-p', String(port), ...command]).toString();
  for (let i = 0; i < 100 && !nodePorts.every((p) => nodeCli(p, 'CLUSTER', 'INFO').includes('cluster_state:ok')); i++) await sleep(200);
  serve(clusterInstancePort, ['--limiter', nodePorts.map((p) => `redis://127.0.0.1:${p}`).join(',')]);
  await waitFor(`http://127.0.0.1:${clusterInstancePort}/health`, 60_000, (s) => s === 200);
  await waitFor(`http://127.0.0.1:${clusterInstancePort}/api?key=admit-0&count=1`, 30_000, (s) => s === 200);
  const nodeFcalls = () => nodePorts.map((p) => {
    const m = /cmdstat_fcall:calls=(\d+),usec=(\d+)/.exec(nodeCli(p, 'INFO', 'commandstats'));
    return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
  });
  const perNodeBefore = nodeFcalls();
  const s5Cluster = wrk(clusterInstancePort, admitPaths, SECONDS, work, { tag: 's5-cluster' });
  const perNodeDelta = nodeFcalls().map((n, i) => ({ calls: n.calls - perNodeBefore[i].calls, usec: n.usec - perNodeBefore[i].usec })).filter((n) => n.calls > 0);
  const perNode = perNodeDelta.map((n) => n.calls);

  // S4: three instances behind haproxy, one stopped, then one killed.
  const config = join(work, 'haproxy.cfg');
  writeFileSync(config, readFileSync(HAPROXY_CONFIG, 'utf8').replace('127.0.0.1:8080', `127.0.0.1:${lbPort}`).replace(/127\.0\.0\.1:808([1-3])/g, (_, i) => `127.0.0.1:${clusterPorts[Number(i) - 1]}`));
  const cluster = clusterPorts.map((port) => serve(port, ['--limiter', redisUrl, '--trust-proxy', '127.0.0.1']));
  pinned(LOAD_CORE, 'haproxy', ['-db', '-f', config]);
  await Promise.all(clusterPorts.map((p) => waitFor(`http://127.0.0.1:${p}/health`, 60_000, (s) => s === 200)));
  await waitFor(`http://127.0.0.1:${lbPort}/api?key=${BENCH_KEY}&count=1`, 30_000, (s) => s === 200);
  const drill = async (signal: NodeJS.Signals, victim: ChildProcess) => {
    const load = startWrk(lbPort, mix, work, { tag: `s4-${signal}` });
    await sleep(5000);
    victim.kill(signal);
    await sleep(10_000);
    return load.finish();
  };
  const sigterm = await drill('SIGTERM', cluster[0]);
  const sigkill = await drill('SIGKILL', cluster[1]);

  const memoryRps = median(s1Runs.memory);
  const redisRps = median(s1Runs.redis);
  const result = {
    date: new Date().toISOString(),
    records: RECORDS,
    unlimited_mix: { memory_rps: memoryRps, redis_rps: redisRps, runs: s1Runs, ratio: round2(redisRps / memoryRps) },
    limited_keys: {
      keys: LIMITED_KEYS,
      ...s2,
      unpaced_ratio: round2(s2.redis.unpaced.rps / s2.memory.unpaced.rps),
      p99_added_ms_at_4000: round2(s2.redis.at_4000.p99_ms - s2.memory.at_4000.p99_ms),
      fcalls: s2Calls,
      redis_usec_per_fcall: round2((s2End.usec - s2Start.usec) / s2Calls),
    },
    one_key_hammered: { requests: hammer.requests, accepted, refused, fcalls: s3Calls, fcalls_per_refused_beyond_first: refused > 0 ? Math.round((Math.max(0, s3Calls - accepted - 1) / refused) * 10000) / 10000 : 0 },
    redis_benchmark_fcall_per_s: fcallPerS,
    admissions: {
      one_redis: { rps: s5Single.rps, p99_ms: s5Single.p99_ms, non_2xx: s5Single.errors, fcalls: singleAfter.calls - singleBefore.calls, usec_per_fcall: round2((singleAfter.usec - singleBefore.usec) / (singleAfter.calls - singleBefore.calls)) },
      cluster_3_primaries: {
        rps: s5Cluster.rps, p99_ms: s5Cluster.p99_ms, non_2xx: s5Cluster.errors,
        fcalls_per_primary: perNode, largest_share: round2(Math.max(...perNode) / perNode.reduce((a, b) => a + b, 0)),
        usec_per_fcall_per_primary: perNodeDelta.map((n) => round2(n.usec / n.calls)),
      },
      ratio: round2(s5Cluster.rps / s5Single.rps),
    },
    drill: { sigterm, sigkill },
  };
  writeResult('cluster', result);
} finally {
  await Promise.all(children.map((c) => stop(c)));
  rmSync(work, { recursive: true, force: true });
}
