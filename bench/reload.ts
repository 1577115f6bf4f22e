/**
 * Reloads, the one benchmark of them, in four parts (`--only` picks some):
 *
 * - stall: 5 reloads through the real watch-and-load path in this process:
 *   the time from the start of a load to the swap, the longest event-loop
 *   stall meanwhile, and the RSS steady and at the peak of a reload (the build
 *   worker's memory included: it is this process's).
 * - rss: the real server on core 0 answers the real mix (bench/mix.ts) from
 *   wrk on core 1 while a checker publishes 5 new versions. Its RSS is read
 *   from /proc every 10 ms. Three steady levels are reported, each with the
 *   peaks over it: loaded and idle, settled under the mix before any reload,
 *   and settled under the mix between reloads, which is what a container runs at.
 * - load: 10 reloads while wrk drives the query mix: no failed response, and
 *   p99 against a run without reloads.
 * - soak: 100 reloads and at least 1,000,000 requests of the query mix, with
 *   the server's RSS and heap read from its /metrics. The first 10 reloads and
 *   100,000 requests are warm-up; RSS must then grow by 10% at most.
 *
 * A checker publishes as checkers do: a complete file renamed over the path,
 * from another process (the rename frees the replaced file's pages, which
 * takes the renaming thread tens of milliseconds; spawning a process from the
 * measured one would stall its event loop for the fork, which a server never does).
 * Run: npm run bench -- reload [--records N] [--soak-records N] [--only stall,rss,load,soak]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/log.js';
import { allowFullCollections, fullCollection } from '../src/core/full-collection.js';
import { SnapshotFeed } from '../src/snapshot/snapshot-feed.js';
import { BENCH_KEY, CLI, generateSnapshot, median, option, recordsOption, round2, serverMemory, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult, wrk, type WrkResult } from './harness.js';
import { QUERY_MIX, REAL_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const PARTS = ['stall', 'rss', 'load', 'soak'] as const;
type Part = (typeof PARTS)[number];
const only = (option('only') ?? PARTS.join(',')).split(',');
for (const p of only) if (!PARTS.includes(p as Part)) throw new Error(`--only takes ${PARTS.join(', ')}, not "${p}"`);
const records = recordsOption(1_000_000);
const soakRecords = Number(option('soak-records') ?? 100_000);
const mb = (b: number) => Math.round(b / 1048576);

/** Versions of a snapshot, each sharing no record with the one before, and a checker that publishes them. */
class Versions {
  readonly dir = mkdtempSync(join(tmpdir(), 'proxylist-reload-'));
  readonly path = join(this.dir, 'snapshot.msgpack');
  readonly files: string[];
  private readonly publisher: ChildProcess;

  /** Every version is written before anything is timed: generating one takes seconds. */
  constructor(count: number, rows: number) {
    const now = Math.floor(Date.now() / 1000);
    this.files = Array.from({ length: count }, (_, i) => join(this.dir, `v${i}.msgpack`));
    this.files.forEach((file, i) => generateSnapshot(file, rows, now, i + 1));
    this.publisher = spawn('sh', ['-c', 'while read -r from to; do cp "$from" "$to.tmp" && mv "$to.tmp" "$to"; done'], { stdio: ['pipe', 'ignore', 'inherit'] });
  }

  /** Publishes version i (modulo the count): a copy renamed over the path. */
  publish(i: number): void {
    this.publisher.stdin!.write(`${this.files[i % this.files.length]} ${this.path}\n`);
  }

  close(): void {
    this.publisher.stdin!.end();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The real server, pinned to the server core, serving the versions' path. */
async function withServer<T>(versions: Versions, run: (server: ChildProcess, port: number, reloads: () => Promise<{ ok: number; failed: number }>) => Promise<T>): Promise<T> {
  const keys = join(versions.dir, 'keys.json');
  writeBenchKeys(keys);
  const [port] = await freePorts(1);
  const reloads = async () => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { reloads: { ok: number; failed: number } }).reloads;
  versions.publish(0);
  while (!existsSync(versions.path)) await sleep(20);
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', versions.path, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 120_000, (s) => s === 200);
    return await run(server, port, reloads);
  } finally {
    await stop(server);
  }
}

/** Publishes version i and waits until the server serves it; the milliseconds that took. */
async function publishServed(versions: Versions, i: number, reloads: () => Promise<{ ok: number }>): Promise<number> {
  const before = (await reloads()).ok;
  const started = Date.now();
  versions.publish(i);
  while ((await reloads()).ok === before) await sleep(20);
  return Date.now() - started;
}

const paths = (mix: readonly string[]) => mix.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);

async function stall(): Promise<void> {
  const RELOADS = 5;
  // As the server does at its start: a dropped store goes back at the full collection before the next load.
  allowFullCollections();
  const gc = fullCollection;
  const versions = new Versions(RELOADS + 1, records);
  const feed = new SnapshotFeed(versions.path, systemClock, createLogger('silent'));
  let swapped = 0;
  feed.onSwap(() => void swapped++);
  try {
    versions.publish(0);
    while (!existsSync(versions.path)) await sleep(20);
    await feed.start();
    while (swapped === 0) await sleep(5);
    await sleep(500);
    gc();
    await sleep(200);
    gc();
    const steady = process.memoryUsage().rss;
    // One histogram over all the reloads (re-enabling one counts the time it was off as a delay).
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const loads: number[] = [];
    const peaks: number[] = [];
    let peak = steady;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    for (let i = 1; i <= RELOADS; i++) {
      const before = swapped;
      peak = process.memoryUsage().rss;
      versions.publish(i);
      while (swapped === before) await sleep(5);
      loads.push(feed.lastLoadMs);
      await sleep(1000); // the old store's memory is let go of meanwhile
      peaks.push(peak);
    }
    loop.disable();
    clearInterval(sampler);
    gc();
    await sleep(200);
    const after = process.memoryUsage().rss;
    writeResult(`reload-stall-${records}`, {
      date: new Date().toISOString(),
      records: feed.current!.rows,
      reloads: RELOADS,
      load_to_swap_ms_median: Math.round(median(loads)),
      load_to_swap_ms_each: loads.map(Math.round),
      longest_event_loop_stall_ms: Math.round(loop.max / 1e6),
      event_loop_delay_p99_ms: Math.round(loop.percentile(99) / 1e4) / 100,
      rss_steady_mb: mb(steady),
      rss_peak_during_reloads_mb: mb(Math.max(...peaks)),
      rss_peak_each_mb: peaks.map(mb),
      peak_over_steady: round2(Math.max(...peaks) / steady),
      rss_after_reloads_mb: mb(after),
    });
  } finally {
    await feed.close();
    versions.close();
  }
}

async function rss(): Promise<void> {
  const RELOADS = 5;
  /** Seconds of the mix before the first reload, and between reloads: RSS under the mix stops growing within them. */
  const SETTLE_S = Number(process.env.SETTLE_S ?? 30);
  const BETWEEN_S = 8;
  const versions = new Versions(RELOADS + 1, records);
  try {
    await withServer(versions, async (server, port, reloads) => {
      /** The server's RSS in MB (taskset execs it: same pid). */
      const rssMb = (): number => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024);
      /** The median of samples taken every 100 ms for `ms`. */
      const settled = async (ms: number): Promise<number> => {
        const samples: number[] = [];
        for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) samples.push(rssMb());
        return median(samples);
      };
      const idle = await settled(1000);
      const load = startWrk(port, paths(REAL_MIX), versions.dir);
      await sleep((SETTLE_S - 2) * 1000);
      const underMix = await settled(2000);
      const peaks: number[] = [];
      const between: number[] = [];
      const loads: number[] = [];
      for (let i = 1; i <= RELOADS; i++) {
        if (i > 1) between.push(await settled(1000));
        let peak = 0;
        const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 10);
        loads.push(await publishServed(versions, i, reloads));
        await sleep((BETWEEN_S - 1) * 1000);
        clearInterval(sampler);
        peaks.push(peak);
      }
      const mix = await load.finish();
      const over = (steady: number) => ({ steady_mb: steady, peak_over_steady_each: peaks.map((p) => round2(p / steady)) });
      writeResult(`reload-rss-${records}`, {
        date: new Date().toISOString(),
        records,
        reloads: RELOADS,
        rss_peak_each_mb: peaks,
        publish_to_served_ms_each: loads,
        loaded_idle: over(idle),
        under_the_mix_before_reloads: over(underMix),
        under_the_mix_between_reloads: over(median(between)),
        mix_requests_per_s: mix.rps,
        mix_errors: mix.errors,
      });
    });
  } finally {
    versions.close();
  }
}

async function load(): Promise<void> {
  const RELOADS = 10;
  const versions = new Versions(2, records);
  try {
    await withServer(versions, async (_server, port, reloads) => {
      wrk(port, paths(QUERY_MIX), 3, versions.dir); // warm-up
      const baseline = wrk(port, paths(QUERY_MIX), 30, versions.dir);
      console.error(`without reloads: ${JSON.stringify(baseline)}`);
      const running = startWrk(port, paths(QUERY_MIX), versions.dir);
      const started = Date.now();
      const first = await reloads();
      for (let i = 1; i <= RELOADS; i++) {
        await publishServed(versions, i, reloads);
        console.error(`reload ${i} served after ${Math.round((Date.now() - started) / 1000)} s`);
      }
      const during = await running.finish();
      const after = await reloads();
      writeResult(`reload-load-${records}`, {
        date: new Date().toISOString(),
        records,
        reloads: after.ok - first.ok,
        reloads_failed: after.failed - first.failed,
        seconds_for_10_reloads: Math.round((Date.now() - started) / 1000),
        without_reloads: baseline,
        with_reloads: during,
        p99_ratio: round2(during.p99_ms / baseline.p99_ms),
      });
    });
  } finally {
    versions.close();
  }
}

async function soak(): Promise<void> {
  const RELOADS = 100;
  const WARM_RELOADS = 10;
  const REQUESTS = 1_000_000;
  const WARM_REQUESTS = 100_000;
  const versions = new Versions(3, soakRecords);
  try {
    await withServer(versions, async (_server, port, reloads) => {
      const phases: Array<{ phase: string; reloads: number; requests: number; rss_mb: number; heap_used_mb: number }> = [];
      let requests = 0;
      let published = 0;
      let errors = 0;
      const runs: WrkResult[] = [];
      // Load in slices of about 10 s; reloads spread over the slices.
      const slice = async (publishes: number) => {
        const running = startWrk(port, paths(QUERY_MIX), versions.dir);
        const started = Date.now();
        for (let i = 0; i < publishes; i++) await publishServed(versions, ++published, reloads);
        await sleep(Math.max(0, 10_000 - (Date.now() - started)));
        const r = await running.finish();
        runs.push(r);
        requests += r.requests;
        errors += r.errors;
      };
      const note = async (phase: string) => {
        const m = await serverMemory(port);
        phases.push({ phase, reloads: published, requests, ...m });
        console.error(`${phase}: ${published} reloads, ${requests} requests, RSS ${m.rss_mb} MB, heap ${m.heap_used_mb} MB`);
      };
      await note('start');
      while (published < WARM_RELOADS || requests < WARM_REQUESTS) await slice(Math.min(2, WARM_RELOADS - published));
      await note('after warm-up');
      while (published < RELOADS || requests < REQUESTS) {
        await slice(Math.min(3, RELOADS - published));
        if (runs.length % 5 === 0) await note(`slice ${runs.length}`);
      }
      await sleep(3000);
      await note('end');
      const warm = phases.find((p) => p.phase === 'after warm-up')!;
      const end = phases.at(-1)!;
      const growth = Math.round(((end.rss_mb - warm.rss_mb) / warm.rss_mb) * 1000) / 10;
      writeResult(`reload-soak-${soakRecords}`, {
        date: new Date().toISOString(),
        records: soakRecords,
        reloads: published,
        reloads_failed: (await reloads()).failed,
        requests,
        wrk_errors: errors,
        start: phases[0],
        after_warm_up: warm,
        end,
        rss_growth_after_warm_up_percent: growth,
        within_10_percent: growth <= 10,
        samples: phases,
      });
    });
  } finally {
    versions.close();
  }
}

const run: Record<Part, () => Promise<void>> = { stall, rss, load, soak };
for (const part of PARTS) if (only.includes(part)) await run[part]();
