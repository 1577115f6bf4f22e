/**
 * This server (defaults) against the bare uWebSockets.js ceiling serving the
 * same bytes, on three workloads, runs of the two alternating so that the
 * machine's drift touches both alike:
 * - small: the small answers (`SMALL_MIX`): the per-request work;
 * - mix: the benchmark mix (`QUERY_MIX`), full dumps included;
 * - gzip: the mix with `Accept-Encoding: gzip`, against a ceiling that serves
 *   the same gzip bytes precompressed;
 * - real: the real mix (`REAL_MIX`: counted small, uncounted medium answers in
 *   a window that moves every second, empty answers), also against nginx
 *   serving the same bytes from pre-rendered files (contenders/nginx.ts).
 * wrk 1 thread x 64 connections on core 1, servers on core 0; the median of
 * 3 runs of 10 s (1 run of 3 s with --quick). Before each run of a
 * contender, the bodies are captured from this server again and the
 * contender started on them: the snapshot does not change during the
 * benchmark, so its windows narrow as it ages, and bodies captured once
 * would be larger than those this server answers by the last run.
 * Run: npm run bench -- ratios [--quick] [-- --records N] [--only small,real]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, median, option, recordsOption, round2, startPinned, stop, waitFor, writeBenchKeys, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { startNginx } from './contenders/nginx.js';
import { QUERY_MIX, REAL_MIX, SMALL_MIX } from './mix.js';

const quick = process.argv.includes('--quick');
const sizes = option('records') !== null ? [recordsOption(0)] : quick ? [100_000] : [100_000, 1_000_000];
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 3 : 10;
const GZIP = { 'Accept-Encoding': 'gzip' };
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const only = process.argv.indexOf('--only');
const workloads = [
  { id: 'small', name: 'small answers', mix: SMALL_MIX, headers: {}, nginx: false },
  { id: 'mix', name: 'the mix', mix: QUERY_MIX, headers: {}, nginx: false },
  { id: 'gzip', name: 'the mix, gzip', mix: QUERY_MIX, headers: GZIP, nginx: false },
  { id: 'real', name: 'the real mix', mix: REAL_MIX, headers: {}, nginx: true },
].filter((w) => only < 0 || process.argv[only + 1].split(',').includes(w.id));

interface WorkloadRow {
  id: string;
  workload: string;
  records: number;
  proxylist: WrkResult & { runs_rps: number[] };
  ceiling: WrkResult & { runs_rps: number[] };
  ratio: number;
  nginx?: WrkResult & { runs_rps: number[] };
  ratio_nginx?: number;
}

async function runSize(records: number, work: string): Promise<{ records: number; workloads: WorkloadRow[] }> {
  const snapshot = join(work, `snapshot-${records}.msgpack`);
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, records, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  const [serverPort, nginxPort, ...ceilingPorts] = await freePorts(2 + workloads.length);
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(serverPort), '--host', '127.0.0.1', '--log-level', 'warn']);
  const out: WorkloadRow[] = [];
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 180_000, (s) => s === 200);
    for (const [i, w] of workloads.entries()) {
      const paths = w.mix.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
      const o: WrkOptions = { headers: w.headers };
      const others = [{ name: 'ceiling', port: ceilingPorts[i] }, ...(w.nginx ? [{ name: 'nginx', port: nginxPort }] : [])];
      wrk(serverPort, paths, 2, work, o); // warm-up
      const runs: WrkResult[][] = [[], ...others.map(() => [])];
      for (let r = 0; r < RUNS; r++) {
        runs[0].push(wrk(serverPort, paths, SECONDS, work, o));
        for (const [c, other] of others.entries()) {
          // The bytes the server answers now: windows narrow as the static snapshot ages, and a body captured once would grow stale.
          const dir = join(work, `bodies-${records}-${w.id}-${r}-${other.name}`);
          mkdirSync(dir, { recursive: true });
          const { index, captured } = await captureBodies(serverPort, paths, dir, w.headers);
          const child = other.name === 'ceiling' ? startPinned(process.execPath, [here('./contenders/ceiling.js'), index, String(other.port)]) : startNginx(captured, other.port, join(dir, 'nginx'));
          try {
            await waitFor(`http://127.0.0.1:${other.port}${paths[0]}`, 60_000, (s) => s === 200);
            wrk(other.port, paths, 2, work, o); // warm-up
            runs[c + 1].push(wrk(other.port, paths, SECONDS, work, o));
          } finally {
            await stop(child);
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
      const m = (rs: WrkResult[]) => ({ ...rs.find((x) => x.rps === median(rs.map((y) => y.rps)))!, runs_rps: rs.map((x) => x.rps) });
      const [ours, top, other] = runs;
      const row: WorkloadRow = {
        id: w.id, workload: w.name, records,
        proxylist: m(ours),
        ceiling: m(top),
        ratio: round2(median(ours.map((x) => x.rps)) / median(top.map((x) => x.rps))),
        ...(other ? { nginx: m(other), ratio_nginx: round2(median(ours.map((x) => x.rps)) / median(other.map((x) => x.rps))) } : {}),
      };
      const vsNginx = row.nginx ? `; nginx ${row.nginx.rps} = ${row.ratio_nginx}x (runs ${row.nginx.runs_rps.join(', ')})` : '';
      console.error(`[${records}] ${w.id} ${w.name}: ${row.proxylist.rps} vs ${row.ceiling.rps} req/s = ${row.ratio}x (runs ${row.proxylist.runs_rps.join(', ')} / ${row.ceiling.runs_rps.join(', ')})${vsNginx}`);
      out.push(row);
    }
  } finally {
    await stop(server);
  }
  return { records, workloads: out };
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-ratios-'));
try {
  const results = [];
  for (const size of sizes) results.push(await runSize(size, work));
  const doc = { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, runs: RUNS, seconds: SECONDS, connections: 64, results };
  writeResult(quick ? 'ratios-quick' : only >= 0 ? `ratios-${process.argv[only + 1].replace(/,/g, '-')}` : 'ratios', doc, false);
  console.log('| # | workload | records | proxylist req/s | ceiling req/s | ratio | proxylist p99 ms | ceiling p99 ms | nginx req/s | vs nginx |\n|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    for (const w of r.workloads) {
      console.log(`| ${w.id} | ${w.workload} | ${r.records.toLocaleString('en')} | ${w.proxylist.rps.toLocaleString('en')} | ${w.ceiling.rps.toLocaleString('en')} | ${w.ratio} | ${w.proxylist.p99_ms} | ${w.ceiling.p99_ms} | ${w.nginx?.rps.toLocaleString('en') ?? ''} | ${w.ratio_nginx ?? ''} |`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
