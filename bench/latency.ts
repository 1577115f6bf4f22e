/**
 * Latency, not only throughput: what a client waits for, by size of answer,
 * against the bare uWebSockets.js ceiling and nginx serving the same bytes.
 * - mix, gzip, small, big: wrk (1 thread x 64 connections) drives the workload
 *   for SECONDS while a prober process (bench/probe.ts, 4 connections more)
 *   times every answer it gets on the same rotation. wrk gives throughput
 *   and the whole mix's p50/p90/p99/max, the prober the same per size class.
 *   The contenders alternate, the bodies captured again from this server
 *   before each run of the others (the snapshot ages, its windows narrow).
 * - burst: 200,000 records, 30 wrk readers of the whole-store JSON (70 MB)
 *   beside one prober connection sending small queries one after another,
 *   from 1 s before the burst to 1 s after: the small answers' count, p50
 *   and p99, the big bodies per second, and a picture of the small answers'
 *   latency over time (bench/results/latency-burst.svg).
 * Servers on core 0, wrk and the prober on core 1. `--cli PATH` runs
 * another build's server (dist/src/cli/main.js of a worktree), to compare.
 * Run: npm run bench -- latency [--quick] [--records N] [--only mix,gzip,small,big,burst] [--cli PATH]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { startNginx } from './contenders/nginx.js';
import { BENCH_KEY, benchFiles, captureBodies, CLI, median, option, probe, recordsOption, round2, sleep, startPinned, startServer, startWrk, stop, waitFor, writeResult, wrk, type ProbeSample, type WrkResult } from './harness.js';
import { LATENCY_MIX, SMALL_MIX, SMALL_WITH_BIG_MIX } from './mix.js';
import { latencyPicture, type Series } from './picture.js';

const quick = process.argv.includes('--quick');
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 4 : 10;
const RECORDS = recordsOption(100_000);
const BURST = { records: 200_000, big: 'time=100000&get=json', readers: 30, small: ['type=http&count=100', 'get=json&country=us&count=50', 'type=socks5&anon=elite&count=20', 'get=json&pretty=0&works=90&count=200'] };
const GZIP = 'Accept-Encoding: gzip';
const only = process.argv.indexOf('--only');
const parts = only < 0 ? ['mix', 'gzip', 'small', 'big', 'burst'] : process.argv[only + 1].split(',');
const SERVER_CLI = option('cli') ?? CLI;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const api = (q: string) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`;

const WORKLOADS = [
  { id: 'mix', mix: LATENCY_MIX, header: '' },
  { id: 'gzip', mix: LATENCY_MIX, header: GZIP },
  { id: 'small', mix: SMALL_MIX, header: '' },
  { id: 'big', mix: SMALL_WITH_BIG_MIX, header: '' },
].filter((w) => parts.includes(w.id));

/** Size classes of an answer's body on the wire, upper bounds in bytes. */
const CLASSES: Array<[string, number]> = [['0-1 KB', 1024], ['1-16 KB', 16 * 1024], ['16-256 KB', 256 * 1024], ['256 KB-1 MB', 1024 * 1024], ['over 1 MB', Infinity]];
const classOf = (bytes: number): string => CLASSES.find(([, top]) => bytes <= top)![0];

interface Spread { n: number; p50_ms: number; p90_ms: number; p99_ms: number; max_ms: number }
const at = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
function spread(ms: number[]): Spread {
  const s = [...ms].sort((a, b) => a - b);
  return { n: s.length, p50_ms: round2(at(s, 0.5)), p90_ms: round2(at(s, 0.9)), p99_ms: round2(at(s, 0.99)), max_ms: round2(s[s.length - 1]) };
}
function byClass(samples: ProbeSample[]): Record<string, Spread> {
  const out: Record<string, Spread> = {};
  for (const [name] of CLASSES) {
    const ms = samples.filter((s) => classOf(s.bytes) === name).map((s) => s.ms);
    if (ms.length > 0) out[name] = spread(ms);
  }
  out.all = spread(samples.map((s) => s.ms));
  return out;
}

async function cacheCounts(port: number): Promise<{ hits: number; misses: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { hits: read('proxylist_response_cache_hits_total'), misses: read('proxylist_response_cache_misses_total') };
}

interface Run { wrk: WrkResult; classes: Record<string, Spread>; cache_hit_share?: number }

/** One run on `port`: wrk's load and the prober's samples over the same seconds. */
async function measure(port: number, paths: string[], header: string, headers: Record<string, string>, work: string, server: boolean): Promise<Run> {
  const before = server ? await cacheCounts(port) : null;
  const timed = probe(port, paths, SECONDS * 1000, work, { connections: 4, header });
  const load = wrk(port, paths, SECONDS, work, { headers });
  const samples = await timed;
  const run: Run = { wrk: load, classes: byClass(samples) };
  if (before) {
    const after = await cacheCounts(port);
    const hits = after.hits - before.hits;
    run.cache_hit_share = round2(hits / (hits + after.misses - before.misses));
  }
  return run;
}

const CONTENDERS = ['proxylist', 'ceiling', 'nginx'] as const;
type Contender = (typeof CONTENDERS)[number];

async function workloads(work: string): Promise<Record<string, unknown>[]> {
  if (WORKLOADS.length === 0) return [];
  const { snapshot, keys } = benchFiles(work, 'snapshot', RECORDS);
  const [serverPort, otherPort] = await freePorts(2);
  const server = startServer(snapshot, keys, serverPort, SERVER_CLI);
  const rows: Record<string, unknown>[] = [];
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 180_000, (s) => s === 200);
    for (const w of WORKLOADS) {
      const paths = w.mix.map(api);
      const headers = w.header ? { [w.header.split(': ')[0]]: w.header.split(': ')[1] } : {};
      wrk(serverPort, paths, 2, work, { headers }); // warm-up
      const runs: Record<Contender, Run[]> = { proxylist: [], ceiling: [], nginx: [] };
      for (let r = 0; r < RUNS; r++) {
        runs.proxylist.push(await measure(serverPort, paths, w.header, headers, work, true));
        for (const other of ['ceiling', 'nginx'] as const) {
          const dir = join(work, `bodies-${w.id}-${r}-${other}`);
          mkdirSync(dir, { recursive: true });
          const { index, captured } = await captureBodies(serverPort, paths, dir, headers);
          const child = other === 'ceiling' ? startPinned(process.execPath, [here('./contenders/ceiling.js'), index, String(otherPort)]) : startNginx(captured, otherPort, join(dir, 'nginx'));
          try {
            await waitFor(`http://127.0.0.1:${otherPort}${paths[0]}`, 60_000, (s) => s === 200);
            wrk(otherPort, paths, 2, work, { headers }); // warm-up
            runs[other].push(await measure(otherPort, paths, w.header, headers, work, false));
          } finally {
            await stop(child);
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
      const row = summarize(w.id, runs);
      console.error(`[${w.id}] ${JSON.stringify(row.ratios)}`);
      rows.push(row);
    }
  } finally {
    await stop(server);
  }
  return rows;
}

/** Per contender the run of median p99 (wrk's), with every run's figures; the ratios of the medians to the ceiling's. */
function summarize(id: string, runs: Record<Contender, Run[]>): Record<string, unknown> & { ratios: Record<string, unknown> } {
  const med = (rs: Run[], f: (r: Run) => number) => median(rs.map(f));
  const contenders = Object.fromEntries(
    CONTENDERS.map((c) => [c, {
      rps: med(runs[c], (r) => r.wrk.rps),
      p50_ms: med(runs[c], (r) => r.wrk.p50_ms),
      p90_ms: med(runs[c], (r) => r.wrk.p90_ms),
      p99_ms: med(runs[c], (r) => r.wrk.p99_ms),
      max_ms: med(runs[c], (r) => r.wrk.max_ms),
      runs_rps: runs[c].map((r) => r.wrk.rps),
      runs_p99_ms: runs[c].map((r) => r.wrk.p99_ms),
      errors: runs[c].reduce((n, r) => n + r.wrk.errors, 0),
      classes: medianClasses(runs[c]),
      ...(c === 'proxylist' ? { cache_hit_share: runs[c].map((r) => r.cache_hit_share) } : {}),
    }]),
  ) as unknown as Record<Contender, { rps: number; p99_ms: number; p50_ms: number }>;
  const ratio = (c: Contender) => ({
    rps: round2(contenders.proxylist.rps / contenders[c].rps),
    p50: round2(contenders.proxylist.p50_ms / contenders[c].p50_ms),
    p99: round2(contenders.proxylist.p99_ms / contenders[c].p99_ms),
    runs_p99: runs.proxylist.map((r, i) => round2(r.wrk.p99_ms / runs[c][i].wrk.p99_ms)),
    runs_rps: runs.proxylist.map((r, i) => round2(r.wrk.rps / runs[c][i].wrk.rps)),
  });
  return { id, contenders, ratios: { vs_ceiling: ratio('ceiling'), vs_nginx: ratio('nginx') } };
}

/** Per size class, the median over runs of each percentile. */
function medianClasses(rs: Run[]): Record<string, Spread> {
  const out: Record<string, Spread> = {};
  for (const name of new Set(rs.flatMap((r) => Object.keys(r.classes)))) {
    const xs = rs.map((r) => r.classes[name]).filter((x) => x !== undefined);
    out[name] = { n: median(xs.map((x) => x.n)), p50_ms: median(xs.map((x) => x.p50_ms)), p90_ms: median(xs.map((x) => x.p90_ms)), p99_ms: median(xs.map((x) => x.p99_ms)), max_ms: median(xs.map((x) => x.max_ms)) };
  }
  return out;
}

interface BurstRun { small: Spread; small_answered: number; big_rps: number; errors: number; samples: ProbeSample[] }

/** One burst: the prober from 1 s before the big readers to 1 s after them. */
async function burstRun(port: number, work: string): Promise<BurstRun> {
  const smallPaths = BURST.small.map(api);
  const timed = probe(port, smallPaths, (SECONDS + 2) * 1000, work);
  await sleep(1000);
  const big = startWrk(port, [api(BURST.big)], work, { connections: BURST.readers });
  await sleep(SECONDS * 1000);
  const b = await big.finish();
  const samples = await timed;
  const during = samples.filter((s) => s.atMs >= 1000 && s.atMs < 1000 + SECONDS * 1000);
  return { small: spread(during.map((s) => s.ms)), small_answered: during.length, big_rps: round2(b.rps), errors: b.errors, samples };
}

async function burst(work: string): Promise<Record<string, unknown> | null> {
  if (!parts.includes('burst')) return null;
  const { snapshot, keys } = benchFiles(work, 'burst', BURST.records);
  const [serverPort, ceilingPort] = await freePorts(2);
  const server = startServer(snapshot, keys, serverPort, SERVER_CLI);
  const runs: Record<'proxylist' | 'ceiling', BurstRun[]> = { proxylist: [], ceiling: [] };
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 180_000, (s) => s === 200);
    const bodies = join(work, 'burst-bodies');
    mkdirSync(bodies, { recursive: true });
    const { index } = await captureBodies(serverPort, [BURST.big, ...BURST.small].map(api), bodies);
    const ceiling = startPinned(process.execPath, [here('./contenders/ceiling.js'), index, String(ceilingPort)]);
    try {
      await waitFor(`http://127.0.0.1:${ceilingPort}${api(BURST.small[0])}`, 60_000, (s) => s === 200);
      // Both run all along, each resting while the other is measured.
      for (let r = 0; r < RUNS; r++) {
        runs.proxylist.push(await burstRun(serverPort, work));
        runs.ceiling.push(await burstRun(ceilingPort, work));
      }
    } finally {
      await stop(ceiling);
    }
  } finally {
    await stop(server);
  }
  const pick = (rs: BurstRun[]) => rs.find((r) => r.small.p99_ms === median(rs.map((x) => x.small.p99_ms)))!;
  const series: Series[] = (['proxylist', 'ceiling'] as const).map((c) => ({ name: c === 'proxylist' ? 'proxylist' : 'uWS ceiling, same bytes', points: pick(runs[c]).samples.map((s) => [s.atMs / 1000, s.ms]) }));
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', 'latency-burst.svg'), latencyPicture(series, `Small queries during a burst: ${BURST.readers} readers of a ${BURST.records.toLocaleString('en')}-record JSON dump from 1 s to ${SECONDS + 1} s`, [1, SECONDS + 1]));
  const ratios = (f: (r: BurstRun) => number) => runs.proxylist.map((r, i) => round2(f(r) / f(runs.ceiling[i])));
  const summary = (rs: BurstRun[]) => ({
    small_answered: rs.map((r) => r.small_answered),
    small_p50_ms: rs.map((r) => r.small.p50_ms),
    small_p99_ms: rs.map((r) => r.small.p99_ms),
    big_rps: rs.map((r) => r.big_rps),
    errors: rs.reduce((n, r) => n + r.errors, 0),
  });
  const result = {
    records: BURST.records, readers: BURST.readers,
    proxylist: summary(runs.proxylist),
    ceiling: summary(runs.ceiling),
    vs_ceiling: {
      small_answered: ratios((r) => r.small_answered),
      small_p50: ratios((r) => r.small.p50_ms),
      small_p99: ratios((r) => r.small.p99_ms),
      big_rps: ratios((r) => r.big_rps),
    },
  };
  console.error(`[burst] ${JSON.stringify(result.vs_ceiling)}`);
  return result;
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-latency-'));
try {
  const rows = await workloads(work);
  const burstResult = await burst(work);
  const doc = { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, records: RECORDS, runs: RUNS, seconds: SECONDS, workloads: rows, burst: burstResult };
  writeResult(quick ? 'latency-quick' : 'latency', doc, false);
  report(rows, burstResult);
} finally {
  rmSync(work, { recursive: true, force: true });
}

function report(rows: Record<string, unknown>[], b: Record<string, unknown> | null): void {
  for (const row of rows as Array<{ id: string; contenders: Record<Contender, { rps: number; p50_ms: number; p90_ms: number; p99_ms: number; max_ms: number; runs_p99_ms: number[]; classes: Record<string, Spread> }>; ratios: { vs_ceiling: { rps: number; p99: number; runs_p99: number[]; runs_rps: number[] } } }>) {
    console.log(`\n### ${row.id}: req/s ${row.ratios.vs_ceiling.rps}x the ceiling (runs ${row.ratios.vs_ceiling.runs_rps.join(', ')}), p99 ${row.ratios.vs_ceiling.p99}x (runs ${row.ratios.vs_ceiling.runs_p99.join(', ')})\n`);
    console.log('| contender | class | answers (prober) | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|');
    for (const c of CONTENDERS) {
      const x = row.contenders[c];
      console.log(`| ${c} | whole mix (wrk, ${x.rps.toLocaleString('en')} req/s) | | ${x.p50_ms} | ${x.p90_ms} | ${x.p99_ms} | ${x.max_ms} |`);
      for (const [name, s] of Object.entries(x.classes)) if (name !== 'all') console.log(`| ${c} | ${name} | ${s.n} | ${s.p50_ms} | ${s.p90_ms} | ${s.p99_ms} | ${s.max_ms} |`);
    }
  }
  if (b) console.log(`\n### burst\n\n${JSON.stringify(b, null, 1)}`);
}
