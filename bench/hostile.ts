/**
 * Hostile clients against a server with the default options and 200,000
 * records (the memory bound of docs/operations.md):
 * - H1: 24 snapshot swaps, one cache-busted query after each: RSS growth;
 * - H2: 60 distinct large JSON bodies read to 90% and then held 20 s: peak
 *   RSS, and the p99 of small queries asked meanwhile;
 * - H3: 200 distinct brotli bodies whose clients leave after 50 ms: CPU
 *   seconds and peak RSS;
 * - H4: the costliest heads and query strings the service accepts
 *   (support/hostile-clients.ts), each sent 100 times one after another:
 *   the server's CPU per request, and /health's slowest answer meanwhile.
 * `--only costly` runs H4 alone, `--only clients` H1 to H3; the engine is the server's default, or
 * PROXYLIST_ENGINE's.
 * Server on core 0; the clients in this process, on core 1 (taskset), but
 * the small queries from a prober of their own (bench/probe.ts), so that
 * reading gigabytes here never shows as their latency. `--cli PATH` runs
 * another build's server (dist/src/cli/main.js of a worktree), to compare.
 * Run: npm run bench -- hostile [--records N] [-- --cli PATH] [--only costly|clients]
 */
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { costlyRequests, firstByteBack, leaveAfter, percentile, readThenHold } from '../support/hostile-clients.js';
import { MB, cpuSeconds, rssBytes, watchPeakRss } from '../support/process-stats.js';
import { BENCH_KEY, CLI, generateSnapshot, probe, recordsOption, round2, sleep, startPinned, stop, waitFor, writeBenchKeys, writeResult } from './harness.js';

const cliArg = process.argv.indexOf('--cli');
const SERVER_CLI = cliArg > 0 ? process.argv[cliArg + 1] : CLI;
/** Small queries' latencies over `ms`, sorted, from the prober on the load core, 20 ms apart. */
const smallLatencies = async (base: string, path: string, ms: number): Promise<number[]> =>
  (await probe(Number(new URL(base).port), [path], ms, work, { pauseMs: 20 })).map((s) => s.ms).sort((a, b) => a - b);
const RECORDS = recordsOption(200_000);
/** The worst case for these options (docs/operations.md, Memory, hostile clients and secrets), no reader without room in the budget. */
const readmeBoundMb = (): number => Math.round(108 + 0.22 * (RECORDS / 1000) + 10 + 0.22 * (RECORDS / 1000) + 1.2 * (CACHE_MB + BODIES_MB) + 40 + 36);
const CACHE_MB = 128;
const BODIES_MB = 512;

const work = mkdtempSync(join(tmpdir(), 'proxylist-hostile-'));
const path = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
const now = Math.floor(Date.now() / 1000);
const versions = [1, 2].map((seed) => {
  const file = join(work, `v${seed}.msgpack`);
  generateSnapshot(file, RECORDS, now + seed, seed);
  return file;
});
copyFileSync(versions[0], path);
writeBenchKeys(keys);
const [port] = await freePorts(1);
const base = `http://127.0.0.1:${port}`;
const FIELDS = ['port', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works', 'smtp', 'telegram', 'avito', 'google'];
/** Distinct large bodies: the whole store in the window, each with a set of at least 9 fields of its own. */
const big = (i: number): string => `/api?key=${BENCH_KEY}&get=json&time=100000&split_ip=1&fields=ip,${FIELDS.filter((_, f) => f < 8 || ((i >> (f - 8)) & 1) === 0 || f === 8 + (i % 5)).join(',')}&pretty=${i % 2}&works=${Math.floor(i / 32)}`;
const SMALL = `/api?key=${BENCH_KEY}&type=http&count=100&get=json`;

const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
const ONLY_COSTLY = ONLY === 'costly';
/** Each costly request sent this many times, one after another. */
const COSTLY_TIMES = 100;

/** H4: each costly request, its server CPU per request and /health's slowest answer while it is sent. */
async function costly(pid: number): Promise<Array<{ request: string; cpu_ms: number; health_max_ms: number }>> {
  const rows = [];
  for (const [request, bytes] of costlyRequests(BENCH_KEY)) {
    let sending = true;
    const cpuBefore = cpuSeconds(pid);
    const attack = (async () => {
      for (let i = 0; i < COSTLY_TIMES; i++) await firstByteBack(port, bytes);
      sending = false;
    })();
    let healthMax = 0;
    while (sending) {
      const started = performance.now();
      await (await fetch(`${base}/health`)).arrayBuffer();
      healthMax = Math.max(healthMax, performance.now() - started);
      await sleep(5);
    }
    await attack;
    rows.push({ request, cpu_ms: round2(((cpuSeconds(pid) - cpuBefore) * 1000) / COSTLY_TIMES), health_max_ms: round2(healthMax) });
    console.error(`H4 ${JSON.stringify(rows[rows.length - 1])}`);
  }
  return rows;
}

/** H1 to H4. */
async function all(pid: number): Promise<void> {
  const generatedAt = async () => ((await (await fetch(`${base}/health`)).json()) as { snapshot: { generated_at: string } }).snapshot.generated_at;

  // H1
  const swap = async (i: number) => {
    const before = await generatedAt();
    const temp = join(work, 'next.msgpack');
    copyFileSync(versions[(i + 1) % 2], temp);
    renameSync(temp, path);
    while ((await generatedAt()) === before) await sleep(50);
    await (await fetch(`${base}/api?key=${BENCH_KEY}&type=http&count=10&_=${1700000000 + i}`)).arrayBuffer();
  };
  for (let i = 0; i < 4; i++) await swap(i);
  const h1Start = rssBytes(pid);
  for (let i = 4; i < 28; i++) await swap(i);
  const h1 = { swaps: 24, rss_start_mb: Math.round(h1Start / MB), rss_growth_mb: Math.round((rssBytes(pid) - h1Start) / MB) };
  console.error(`H1 ${JSON.stringify(h1)}`);

  // H2
  const quiet = await smallLatencies(base, SMALL, 5000);
  let peak = watchPeakRss(pid);
  const h2Start = rssBytes(pid);
  const h2Began = Date.now();
  const latencies = smallLatencies(base, SMALL, 40_000);
  const held = [];
  for (let wave = 0; wave < 6; wave++) held.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => readThenHold(port, big(wave * 10 + i), 0.9, 120_000)))));
  const readAt = Date.now();
  await sleep(20_000);
  for (const h of held) h.close();
  const during = await latencies;
  const h2 = {
    bodies: held.length,
    body_mb: [Math.round(Math.min(...held.map((h) => h.expected)) / MB), Math.round(Math.max(...held.map((h) => h.expected)) / MB)],
    seconds_to_read: round2((readAt - h2Began) / 1000),
    rss_start_mb: Math.round(h2Start / MB),
    rss_peak_mb: Math.round(peak.stop() / MB),
    bound_mb: readmeBoundMb(),
    small_quiet: { p50_ms: round2(percentile(quiet, 0.5)), p99_ms: round2(percentile(quiet, 0.99)) },
    small_during: { requests: during.length, p50_ms: round2(percentile(during, 0.5)), p99_ms: round2(percentile(during, 0.99)), max_ms: round2(during[during.length - 1]) },
  };
  console.error(`H2 ${JSON.stringify(h2)}`);
  await sleep(3000);

  // H3
  peak = watchPeakRss(pid);
  const cpuBefore = cpuSeconds(pid);
  const started = Date.now();
  const latencies3 = smallLatencies(base, SMALL, 15_000);
  for (let wave = 0; wave < 10; wave++) await Promise.all(Array.from({ length: 20 }, (_, i) => leaveAfter(port, big(wave * 20 + i), 50, { 'Accept-Encoding': 'br' })));
  const during3 = await latencies3;
  const h3 = {
    clients: 200,
    seconds: round2((Date.now() - started) / 1000),
    cpu_s: round2(cpuSeconds(pid) - cpuBefore),
    rss_peak_mb: Math.round(peak.stop() / MB),
    small_during: { p50_ms: round2(percentile(during3, 0.5)), p99_ms: round2(percentile(during3, 0.99)), max_ms: round2(during3[during3.length - 1]) },
  };
  console.error(`H3 ${JSON.stringify(h3)}`);
  // A build from before H4 may take seconds a request: `--only clients` leaves it out.
  const h4 = ONLY === 'clients' ? null : await costly(pid);
  writeResult('hostile', { date: new Date().toISOString(), records: RECORDS, cache_mb: CACHE_MB, bodies_mb: BODIES_MB, h1, h2, h3, h4 });
}

const server = startPinned(process.execPath, [SERVER_CLI, 'serve', '--snapshot', path, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', '--drain-s', '0', '--trust-proxy', '127.0.0.1']);
try {
  await waitFor(`${base}/health`, 60_000, (s) => s === 200);
  // taskset runs the server in its own process.
  const pid = server.pid!;
  if (ONLY_COSTLY) writeResult(`hostile-costly-${process.env.PROXYLIST_ENGINE ?? 'default'}`, { date: new Date().toISOString(), records: RECORDS, times: COSTLY_TIMES, h4: await costly(pid) });
  else await all(pid);
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
