/**
 * The burst: clients on cron fetch the whole list at the same second.
 * - 200,000 records: 30 connections download `time=100000&get=json` (the
 *   whole store, about 70 MB) over and over, while one more connection sends
 *   small queries; default options.
 * - 1,000,000 records: 16 connections on `time=3600&get=json` (about 350 MB).
 * The same bytes are served in the same run, runs alternating, by the bare
 * server of the engine's kind: the uWebSockets.js ceiling, or a bare
 * node:http server for `--engine node`. Reported: the small queries'
 * answers, p50 and p99, the big bodies per second, each against the
 * ceiling's in the same round,
 * the server's peak RSS (VmHWM) and its longest event-loop delay
 * (from its own /metrics, which prom-client reads with monitorEventLoopDelay).
 * Servers on core 0, wrk on core 1.
 * With --probe, the small queries come from the prober (bench/probe.ts: one
 * connection, one query after another, timed to the last byte) and the big
 * readers run at the lowest priority (nice 19), so the load core serves the
 * small client first and its figures are the server's.
 * Run: npm run bench -- burst [--quick] [--probe] [--engine uws|node] [--runs N] [--cli PATH]
 *   (--quick: 200,000 records, 1 run; --cli: another build's dist/src/cli/main.js)
 */
import { type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, median, option, probe, round2, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult, wrk, type ProbeSample, type WrkResult } from './harness.js';

const quick = process.argv.includes('--quick');
const PROBE = process.argv.includes('--probe');
const RUNS = Number(option('runs') ?? (quick ? 1 : 3));
const ENGINE = option('engine') ?? 'uws';
/** Each engine against the bare server of its own kind, serving the same bytes. */
const CEILING = ENGINE === 'node' ? { name: 'bare node:http', file: './contenders/node-ceiling.js' } : { name: 'uWS ceiling', file: './contenders/ceiling.js' };
/** Another build's server (dist/src/cli/main.js of a worktree), to compare revisions. */
const SERVER_CLI = option('cli') ?? CLI;
const SECONDS = 10;
const SMALL = ['type=http&count=100', 'get=json&country=us&count=50', 'type=socks5&anon=elite&count=20', 'get=json&pretty=0&works=90&count=200'];
const cases = [
  { records: 200_000, big: 'time=100000&get=json', readers: 30 },
  ...(quick ? [] : [{ records: 1_000_000, big: 'time=3600&get=json', readers: 16 }]),
];

const peakRssMb = (child: ChildProcess): number => Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024);

async function loopDelayMaxMs(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Math.round(Number(/^proxylist_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)![1]) * 1000 * 10) / 10;
}

interface Row { name: string; big_rps: number; big_mb_per_s: number; small_p50_ms: number; small_p99_ms: number; small_rps: number; errors: number; peak_rss_mb: number; loop_delay_max_ms?: number }

/** One burst against `port`: the big readers in the background, the small client measured in the foreground. */
async function burst(port: number, bigPath: string, readers: number, smallPaths: string[], work: string, server: boolean): Promise<Omit<Row, 'name' | 'peak_rss_mb'>> {
  if (server) await loopDelayMaxMs(port); // the maximum is kept since the last scrape
  const big = startWrk(port, [bigPath], work, { connections: readers, ...(PROBE ? { nice: 19 } : {}) });
  await sleep(1000);
  const small = PROBE ? probed(await probe(port, smallPaths, SECONDS * 1000, work)) : wrk(port, smallPaths, SECONDS, work, { connections: 1, tag: 'small' });
  const b = await big.finish();
  const delay = server ? { loop_delay_max_ms: await loopDelayMaxMs(port) } : {};
  return { big_rps: Math.round((b.rps) * 10) / 10, big_mb_per_s: b.mb_per_s, small_p50_ms: small.p50_ms, small_p99_ms: small.p99_ms, small_rps: small.rps, errors: b.errors + small.errors, ...delay };
}

/** The prober's answers as wrk's figures: answers per second, p50 and p99. */
function probed(samples: ProbeSample[]): Pick<WrkResult, 'rps' | 'p50_ms' | 'p99_ms' | 'errors'> {
  const ms = samples.map((x) => x.ms).sort((a, b) => a - b);
  const at = (q: number): number => round2(ms[Math.min(ms.length - 1, Math.floor(ms.length * q))]);
  return { rps: Math.round(samples.length / SECONDS), p50_ms: at(0.5), p99_ms: at(0.99), errors: 0 };
}

async function runCase(c: (typeof cases)[number], work: string): Promise<Record<string, unknown>> {
  const snapshot = join(work, `snapshot-${c.records}.msgpack`);
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, c.records, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  const bigPath = `/api?key=${BENCH_KEY}&${c.big}`;
  const smallPaths = SMALL.map((q) => `/api?key=${BENCH_KEY}&${q}`);
  const [serverPort, ceilingPort] = await freePorts(2);
  const server = startPinned(process.execPath, [SERVER_CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(serverPort), '--host', '127.0.0.1', '--log-level', 'warn', '--engine', ENGINE]);
  let ceiling: ChildProcess | null = null;
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 180_000, (s) => s === 200);
    const bodies = join(work, `bodies-${c.records}`);
    mkdirSync(bodies, { recursive: true });
    const captured = await captureBodies(serverPort, [bigPath, ...smallPaths], bodies);
    const bigBytes = captured.captured[0].body.length;
    console.error(`[${c.records}] big body ${(bigBytes / 1e6).toFixed(1)} MB, ${c.readers} readers, ${ENGINE} engine against ${CEILING.name}`);
    ceiling = startPinned(process.execPath, [fileURLToPath(new URL(CEILING.file, import.meta.url)), captured.index, String(ceilingPort)]);
    await waitFor(`http://127.0.0.1:${ceilingPort}${smallPaths[0]}`, 60_000, (s) => s === 200);
    // Alternating, so that the machine's drift touches both alike.
    const ours: Array<Omit<Row, 'name' | 'peak_rss_mb'>> = [];
    const top: Array<Omit<Row, 'name' | 'peak_rss_mb'>> = [];
    // With the prober: the small queries alone first, on an idle server and ceiling.
    const alone: Array<{ server: ReturnType<typeof probed>; ceiling: ReturnType<typeof probed> }> = [];
    for (let i = 0; PROBE && i < RUNS; i++) {
      alone.push({ server: probed(await probe(serverPort, smallPaths, SECONDS * 1000, work)), ceiling: probed(await probe(ceilingPort, smallPaths, SECONDS * 1000, work)) });
      console.error(`[${c.records}] alone, run ${i + 1}: ${JSON.stringify(alone[i])}`);
    }
    for (let i = 0; i < RUNS; i++) {
      ours.push(await burst(serverPort, bigPath, c.readers, smallPaths, work, true));
      top.push(await burst(ceilingPort, bigPath, c.readers, smallPaths, work, false));
      console.error(`[${c.records}] run ${i + 1}: ${JSON.stringify(ours[i])} / ${JSON.stringify(top[i])}`);
    }
    const rows: Row[] = [
      { name: `proxylist, ${ENGINE} engine (defaults)`, ...pick(ours), peak_rss_mb: peakRssMb(server) },
      { name: `${CEILING.name} (same bytes)`, ...pick(top), peak_rss_mb: peakRssMb(ceiling) },
    ];
    const ratios = (f: (r: Omit<Row, 'name' | 'peak_rss_mb'>) => number) => ours.map((r, i) => round2(f(r) / f(top[i])));
    return {
      records: c.records, big_query: c.big, big_mb: Math.round(bigBytes / 1e5) / 10, readers: c.readers, rows,
      // Per run, this server's figure over the ceiling's in the same round.
      vs_ceiling: {
        small_answered: ratios((r) => r.small_rps),
        small_p50: ratios((r) => r.small_p50_ms),
        small_p99: ratios((r) => r.small_p99_ms),
        big_rate: ratios((r) => r.big_mb_per_s),
        ...(PROBE ? { alone_p50: alone.map((a) => round2(a.server.p50_ms / a.ceiling.p50_ms)), alone_p99: alone.map((a) => round2(a.server.p99_ms / a.ceiling.p99_ms)) } : {}),
      },
      ...(PROBE ? { alone } : {}),
    };
  } finally {
    await stop(server);
    if (ceiling) await stop(ceiling);
  }
}

/** The run with the median big-body throughput; the worst small p99 and loop delay of all runs. */
function pick(runs: Array<Omit<Row, 'name' | 'peak_rss_mb'>>): Omit<Row, 'name' | 'peak_rss_mb'> & { runs_big_rps: number[]; runs_small_p99_ms: number[] } {
  const m = median(runs.map((r) => r.big_rps));
  const chosen = runs.find((r) => r.big_rps === m)!;
  const delays = runs.map((r) => r.loop_delay_max_ms).filter((d): d is number => d !== undefined);
  return {
    ...chosen,
    ...(delays.length > 0 ? { loop_delay_max_ms: Math.max(...delays) } : {}),
    runs_big_rps: runs.map((r) => r.big_rps),
    runs_small_p99_ms: runs.map((r) => r.small_p99_ms),
  };
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-burst-'));
try {
  const results = [];
  for (const c of cases) results.push(await runCase(c, work));
  const doc = { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, engine: ENGINE, small_client: PROBE ? 'prober, big readers at nice 19' : 'wrk, 1 connection', runs: RUNS, seconds: SECONDS, small_queries: SMALL, results };
  writeResult(`burst-${ENGINE}${quick ? '-quick' : ''}${PROBE ? '-probe' : ''}`, doc, false);
  console.log('| records | contender | big bodies/s | MB/s | small p50 ms | small p99 ms | peak RSS MB | longest loop delay ms | errors |\n|---|---|---|---|---|---|---|---|---|');
  for (const r of results as Array<{ records: number; rows: Row[] }>) {
    for (const row of r.rows) console.log(`| ${r.records.toLocaleString('en')} | ${row.name} | ${row.big_rps} | ${row.big_mb_per_s} | ${row.small_p50_ms} | ${row.small_p99_ms} | ${row.peak_rss_mb} | ${row.loop_delay_max_ms ?? '-'} | ${row.errors} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
