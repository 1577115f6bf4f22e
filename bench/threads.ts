/**
 * Every core in one process (docs/threads.md), on this machine's two cores,
 * with the load generator sharing them, as the issue's targets read:
 *
 * - throughput: the small answers (`SMALL_MIX`) against the server with 2
 *   threads, the same build with 1 thread, and nginx with 2 workers serving
 *   the bytes the server answered, and nginx with 1 worker; wrk with 2
 *   threads, 64 connections; alternating, median of `RUNS` × 10 s.
 * - big: the same with the small answers and a few big ones
 *   (`SMALL_WITH_BIG_MIX`).
 * - costs: the CPU one small answer costs the server (1 thread) and wrk
 *   (1 thread), each pinned to a core of its own, and what that allows on two
 *   shared cores.
 * - rss: RSS at 1,000,000 records with 1 and 2 threads, settled after a few queries.
 * - reload: the process's CPU time per reload of 1,000,000 records, and the
 *   peak RSS of each reload, with 1 and 2 threads.
 * - burst: 30 readers of the whole JSON dump beside a client of small
 *   queries: the small queries' p99 with 1 and 2 threads.
 *
 * Run: npm run bench -- threads [--records N] [--only throughput,big,costs,rss,reload,burst]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { startNginx } from './contenders/nginx.js';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, median, option, recordsOption, round2, SERVER_CORE, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { SMALL_MIX, SMALL_WITH_BIG_MIX } from './mix.js';

const PARTS = ['throughput', 'big', 'costs', 'rss', 'reload', 'burst'] as const;
const only = (option('only') ?? PARTS.join(',')).split(',');
const records = recordsOption(100_000);
const BOTH = '0,1';
const RUNS = 3;
const SECONDS = 10;
/** The load on both cores, beside the server. */
const LOAD: WrkOptions = { threads: 2, cores: BOTH };
const work = process.env.TMPDIR!;
const keys = join(work, 'keys.json');
writeBenchKeys(keys);
const now = Math.floor(Date.now() / 1000);
const api = (q: string) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`;
const small = SMALL_MIX.map(api);

const snapshotOf = (rows: number, seed = 1): string => {
  const file = join(work, `snapshot-${rows}-${seed}.msgpack`);
  generateSnapshot(file, rows, now, seed);
  return file;
};

/** The server with `threads` threads on both cores, ready; stopped after `run`. */
async function withServer<T>(snapshot: string, threads: number, run: (port: number, pid: number) => Promise<T>): Promise<T> {
  const [port] = await freePorts(1);
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', '--threads', String(threads), '--drain-s', '0'], BOTH);
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 180_000, (s) => s === 200);
    return await run(port, server.pid!);
  } finally {
    await stop(server);
  }
}

const rssMb = (pid: number): number => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
/** CPU seconds the process has used, every thread of it. */
const cpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const medianRun = (rs: WrkResult[]) => ({ ...rs.find((x) => x.rps === median(rs.map((y) => y.rps)))!, runs_rps: rs.map((x) => x.rps) });

/** `paths` from 1 and 2 threads and from nginx with 1 and 2 workers serving the same bytes; results under `name`. */
async function throughput(name: string, paths: string[]): Promise<void> {
  const snapshot = snapshotOf(records);
  const runs: Record<'one' | 'two' | 'nginx1' | 'nginx2', WrkResult[]> = { one: [], two: [], nginx1: [], nginx2: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const threads of [1, 2]) {
      runs[threads === 1 ? 'one' : 'two'].push(
        await withServer(snapshot, threads, async (port) => {
          wrk(port, paths, 2, work, LOAD);
          return wrk(port, paths, SECONDS, work, LOAD);
        }),
      );
    }
    // nginx serves the bytes the server answers now, with 1 and with 2 workers: what a second worker gives it here.
    await withServer(snapshot, 1, async (port) => {
      const dir = join(work, `nginx-${r}`);
      mkdirSync(dir, { recursive: true });
      const { captured } = await captureBodies(port, paths, dir);
      for (const workers of [1, 2]) {
        const [nginxPort] = await freePorts(1);
        const nginx = startNginx(captured, nginxPort, join(dir, `nginx-${workers}`), undefined, { workers, cores: BOTH });
        try {
          await waitFor(`http://127.0.0.1:${nginxPort}${paths[0]}`, 60_000, (s) => s === 200);
          wrk(nginxPort, paths, 2, work, LOAD);
          runs[workers === 1 ? 'nginx1' : 'nginx2'].push(wrk(nginxPort, paths, SECONDS, work, LOAD));
        } finally {
          await stop(nginx);
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
    console.error(`run ${r + 1}: 1 thread ${runs.one.at(-1)!.rps}, 2 threads ${runs.two.at(-1)!.rps}, nginx 1 worker ${runs.nginx1.at(-1)!.rps}, 2 workers ${runs.nginx2.at(-1)!.rps} req/s`);
  }
  const rps = (k: keyof typeof runs) => median(runs[k].map((x) => x.rps));
  writeResult(`threads-${name}-${records}`, {
    date: new Date().toISOString(),
    records,
    load: 'wrk, 2 threads, 64 connections, on the same two cores',
    one_thread: medianRun(runs.one),
    two_threads: medianRun(runs.two),
    nginx_one_worker: medianRun(runs.nginx1),
    nginx_two_workers: medianRun(runs.nginx2),
    two_over_one: round2(rps('two') / rps('one')),
    two_over_nginx: round2(rps('two') / rps('nginx2')),
    nginx_two_over_one: round2(rps('nginx2') / rps('nginx1')),
  });
}

/**
 * What one small answer costs the server and the load generator, each on a
 * core of its own (1 thread each): CPU seconds over requests. With both
 * sharing two cores, no number of server threads can answer more than
 * 2 / (server + wrk) per second, nor a single thread more than 1 / server.
 */
async function costs(): Promise<void> {
  const snapshot = snapshotOf(records);
  const got: Array<{ rps: number; server_us: number; wrk_us: number }> = [];
  for (let r = 0; r < RUNS; r++) {
    const [port] = await freePorts(1);
    const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', '--threads', '1', '--drain-s', '0'], SERVER_CORE);
    try {
      await waitFor(`http://127.0.0.1:${port}/health`, 180_000, (s) => s === 200);
      wrk(port, small, 2, work);
      const load = startWrk(port, small, work);
      await sleep(500);
      const server0 = cpuSeconds(server.pid!);
      const wrk0 = cpuSeconds(load.pid);
      await sleep(SECONDS * 1000);
      const serverCpu = cpuSeconds(server.pid!) - server0;
      const wrkCpu = cpuSeconds(load.pid) - wrk0;
      const result = await load.finish();
      // wrk's count covers its whole run: the requests of the measured seconds are its rate times them.
      const requests = result.rps * SECONDS;
      got.push({ rps: result.rps, server_us: round2((serverCpu / requests) * 1e6), wrk_us: round2((wrkCpu / requests) * 1e6) });
    } finally {
      await stop(server);
    }
  }
  const server = median(got.map((x) => x.server_us));
  const load = median(got.map((x) => x.wrk_us));
  writeResult(`threads-costs-${records}`, {
    date: new Date().toISOString(),
    records,
    runs: got,
    server_us_per_request: server,
    wrk_us_per_request: load,
    most_on_two_shared_cores_rps: Math.round(2e6 / (server + load)),
    most_for_one_thread_rps: Math.round(1e6 / server),
    best_two_over_one: round2(Math.max(server, load) * 2 / (server + load)),
  });
}

async function rss(): Promise<void> {
  const snapshot = snapshotOf(1_000_000);
  const got: Record<number, number[]> = { 1: [], 2: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const threads of [1, 2]) {
      got[threads].push(
        await withServer(snapshot, threads, async (port, pid) => {
          for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${port}${small[i % small.length]}&_=${i}`)).arrayBuffer();
          await sleep(3000);
          return rssMb(pid);
        }),
      );
    }
  }
  writeResult('threads-rss-1000000', { date: new Date().toISOString(), records: 1_000_000, rss_mb_one_thread: got[1], rss_mb_two_threads: got[2], two_over_one: round2(median(got[2]) / median(got[1])) });
}

async function reload(): Promise<void> {
  const RELOADS = 5;
  const versions = [1, 2].map((seed) => snapshotOf(1_000_000, seed));
  const path = join(work, 'served.msgpack');
  const cpu: Record<number, number[]> = { 1: [], 2: [] };
  // The peak RSS of each reload: a store every thread has let go of goes back, so the peaks stay level.
  const peaks: Record<number, number[][]> = { 1: [], 2: [] };
  for (const threads of [1, 2, 1, 2]) {
    execFileSync('cp', [versions[0], path]);
    const run = await withServer(path, threads, async (port, pid) => {
      const ok = async () => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { reloads: { ok: number } }).reloads.ok;
      await sleep(2000);
      const before = cpuSeconds(pid);
      const each: number[] = [];
      for (let i = 1; i <= RELOADS; i++) {
        const was = await ok();
        let peak = rssMb(pid);
        const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 10);
        execFileSync('sh', ['-c', `cp "${versions[i % 2]}" "${path}.tmp" && mv "${path}.tmp" "${path}"`]);
        while ((await ok()) === was) await sleep(100);
        await sleep(1500);
        clearInterval(sampler);
        each.push(peak);
      }
      return { cpu: round2((cpuSeconds(pid) - before) / RELOADS), peaks: each };
    });
    cpu[threads].push(run.cpu);
    peaks[threads].push(run.peaks);
  }
  writeResult('threads-reload-1000000', {
    date: new Date().toISOString(),
    records: 1_000_000,
    cpu_s_per_reload_one_thread: cpu[1],
    cpu_s_per_reload_two_threads: cpu[2],
    two_over_one: round2(median(cpu[2]) / median(cpu[1])),
    peak_rss_mb_each_reload_one_thread: peaks[1],
    peak_rss_mb_each_reload_two_threads: peaks[2],
  });
}

async function burst(): Promise<void> {
  const snapshot = snapshotOf(200_000);
  const big = `/api?key=${BENCH_KEY}&time=100000&get=json`;
  const got: Record<number, WrkResult[]> = { 1: [], 2: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const threads of [1, 2]) {
      got[threads].push(
        await withServer(snapshot, threads, async (port) => {
          const readers = startWrk(port, [big], work, { connections: 30, ...LOAD, threads: 1 });
          await sleep(1000);
          const smallRun = wrk(port, small, SECONDS, work, { connections: 1, tag: 'small', cores: BOTH });
          await readers.finish();
          return smallRun;
        }),
      );
    }
  }
  const p99 = (t: number) => median(got[t].map((x) => x.p99_ms));
  writeResult('threads-burst-200000', { date: new Date().toISOString(), records: 200_000, readers: 30, small_p99_ms_one_thread: got[1].map((x) => x.p99_ms), small_p99_ms_two_threads: got[2].map((x) => x.p99_ms), two_over_one: round2(p99(2) / p99(1)) });
}

const run = { throughput: () => throughput('throughput', small), big: () => throughput('big', SMALL_WITH_BIG_MIX.map(api)), costs, rss, reload, burst };
for (const part of PARTS) if (only.includes(part)) await run[part]();
