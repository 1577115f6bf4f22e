/**
 * CPU per answer (docs/operations.md, Where it runs): each engine against
 * the bare server of its own kind serving the same bytes and header lines
 * (contenders/ceiling.ts for uws, contenders/node-ceiling.ts for the node
 * engine), on the small answers (`SMALL_MIX`, each with a `count`) and on
 * the real mix (`REAL_MIX`: a third of it medium answers whose window moves
 * every second, rendered again each second). CPU per answer is the server
 * process's CPU time (utime + stime of every thread, /proc/PID/stat) over
 * the answers wrk counted. Each server runs alone on core 0 (one serving
 * thread), wrk on core 1; the runs alternate (service, bare server) and the
 * medians of 3 are reported with every run, beside req/s and p99.
 *
 * By default one unlimited key asks the mixes again and again: nearly every
 * answer is a repeated one (docs/design.md, A repeated answer). `--crowd`
 * measures what real clients send, each request different from the one
 * before (docs/operations.md, Where it runs):
 * - `keys`: CROWD_KEYS keys with the default limits (2 per 5 s), each
 *   request the next key, each key within its limits (every answer a 200,
 *   with its RateLimit fields);
 * - `busters`: one unlimited key, each request with a cache-buster `_=N`.
 * The bare servers then look an answer up without the key and the
 * cache-buster (contenders/answer-key.ts), and answer with the same header
 * lines, RateLimit fields included.
 * Run: npm run bench -- cost [--quick] [--records N] [--engines uws,node] [--only small,mix] [--cli PATH] [--crowd keys|busters]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { freePorts } from '../support/ports.js';
import { cpuSeconds } from '../support/process-stats.js';
import { BENCH_KEY, CLI, benchFiles, captureBodies, crowdKeyName, median, recordsOption, round2, serverFlags, startPinned, startServer, stop, waitFor, writeCrowdKeys, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { REAL_MIX, SMALL_MIX } from './mix.js';

const quick = process.argv.includes('--quick');
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 4 : 10;
const RECORDS = recordsOption(100_000);
const arg = (name: string): string | null => {
  const i = process.argv.indexOf(name);
  return i < 0 ? null : process.argv[i + 1];
};
const ENGINES = (arg('--engines') ?? 'uws,node').split(',') as Array<'uws' | 'node'>;
const PARTS = (arg('--only') ?? 'small,mix').split(',');
const SERVER_CLI = arg('--cli') ?? CLI;
const CROWD = arg('--crowd') as 'keys' | 'busters' | null;
if (CROWD !== null && CROWD !== 'keys' && CROWD !== 'busters') throw new Error('--crowd keys|busters');
/**
 * Keys of the crowd: each is asked at most once in every 5 s as long as
 * the server answers fewer than CROWD_KEYS / 5 requests a second.
 */
const CROWD_KEYS = 400_000;
/** The crowd key the next run starts from: a run goes on from where the one before stopped. */
let crowdNext = 0;
const MIXES: Record<string, readonly string[]> = { small: SMALL_MIX, mix: REAL_MIX };
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const CEILINGS = { uws: here('./contenders/ceiling.js'), node: here('./contenders/node-ceiling.js') };
/** Every header line the service sends but those its engine writes itself: the bare servers send the same. */
const EVERY_HEADER = ['content-type', 'cache-control', 'vary', 'etag', 'snapshot-generated-at', 'list-cursor', 'content-disposition', 'content-encoding', 'x-content-type-options', 'ratelimit-policy', 'ratelimit'];

interface Run {
  rps: number;
  p99_ms: number;
  cpu_us_per_answer: number;
  /** Answers that were not a 200, and other errors wrk counted: none, or the run does not measure what it says. */
  errors: number;
}

/** wrk's options for a crowd: the next keys, or a cache-buster each. */
function crowdOptions(): WrkOptions {
  if (CROWD === 'keys') return { crowdKeys: CROWD_KEYS, crowdFrom: crowdNext };
  return CROWD === 'busters' ? { buster: true } : {};
}

/** One wrk run against `server`, with the CPU it took. */
function measured(server: ChildProcess, port: number, paths: readonly string[], work: string): Run {
  const before = cpuSeconds(server.pid!);
  const r: WrkResult = wrk(port, paths, SECONDS, work, crowdOptions());
  const cpu = cpuSeconds(server.pid!) - before;
  crowdNext = (crowdNext + r.requests) % CROWD_KEYS;
  if (r.errors > 0) console.error(`  ${r.errors} errors or answers that were not a 200 in a run`);
  return { rps: round2(r.rps), p99_ms: r.p99_ms, cpu_us_per_answer: round2((cpu * 1e6) / r.requests), errors: r.errors };
}

const summary = (runs: Run[]) => ({
  rps: median(runs.map((r) => r.rps)),
  p99_ms: median(runs.map((r) => r.p99_ms)),
  cpu_us_per_answer: median(runs.map((r) => r.cpu_us_per_answer)),
  runs,
});

async function part(engine: 'uws' | 'node', name: string, snapshot: string, keys: string, work: string): Promise<Record<string, unknown>> {
  const paths = MIXES[name].map((q) => `/api?key=${CROWD === 'keys' ? 'KEYHERE' : BENCH_KEY}&${q}`);
  // Captured with keys of their own, the crowd going on after them.
  const concrete = paths.map((p, i) => p.replace('KEYHERE', crowdKeyName(i)));
  crowdNext = paths.length;
  const [port, barePort] = await freePorts(2);
  const server = startServer(snapshot, keys, port, SERVER_CLI, ['--engine', engine]);
  let bare: ChildProcess | null = null;
  const service: Run[] = [];
  const ceiling: Run[] = [];
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 180_000, (s) => s === 200);
    const dir = join(work, `bodies-${engine}-${name}`);
    mkdirSync(dir, { recursive: true });
    const { index } = await captureBodies(port, concrete, dir, {}, false, EVERY_HEADER);
    wrk(port, paths, 2, work, crowdOptions()); // warm-up
    bare = startPinned(process.execPath, [...serverFlags(), CEILINGS[engine], index, String(barePort)], undefined, CROWD ? { CEILING_CROWD: '1' } : {});
    await waitFor(`http://127.0.0.1:${barePort}${concrete[0]}`, 60_000, (s) => s === 200);
    wrk(barePort, paths, 2, work, crowdOptions()); // warm-up
    for (let r = 0; r < RUNS; r++) {
      service.push(measured(server, port, paths, work));
      ceiling.push(measured(bare, barePort, paths, work));
    }
  } finally {
    await stop(server);
    if (bare) await stop(bare);
  }
  const s = summary(service);
  const c = summary(ceiling);
  const row = {
    engine, part: name, crowd: CROWD ?? 'repeated', service: s, bare: c,
    cpu_ratio: round2(s.cpu_us_per_answer / c.cpu_us_per_answer),
    cpu_ratio_per_run: service.map((x, i) => round2(x.cpu_us_per_answer / ceiling[i].cpu_us_per_answer)),
    rps_ratio: round2(s.rps / c.rps),
    rps_ratio_per_run: service.map((x, i) => round2(x.rps / ceiling[i].rps)),
    p99_ratio: round2(s.p99_ms / c.p99_ms),
  };
  console.error(`[${engine} ${name}] CPU/answer ${s.cpu_us_per_answer} us vs ${c.cpu_us_per_answer} us = ${row.cpu_ratio}x (runs ${row.cpu_ratio_per_run.join(', ')}); req/s ${row.rps_ratio}x (runs ${row.rps_ratio_per_run.join(', ')}); p99 ${s.p99_ms} vs ${c.p99_ms} ms`);
  return row;
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-cost-'));
try {
  const { snapshot, keys } = benchFiles(work, 'cost', RECORDS);
  if (CROWD === 'keys') writeCrowdKeys(keys, CROWD_KEYS);
  const rows = [];
  for (const name of PARTS) for (const engine of ENGINES) rows.push(await part(engine, name, snapshot, keys, work));
  writeResult(`cost${CROWD ? `-${CROWD}` : ''}${quick ? '-quick' : ''}-node${process.versions.node.split('.')[0]}`, { crowd: CROWD ?? 'repeated', date: new Date().toISOString(), node: process.versions.node, records: RECORDS, runs: RUNS, seconds: SECONDS, rows });
} finally {
  rmSync(work, { recursive: true, force: true });
}
