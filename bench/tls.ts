/**
 * HTTPS (docs/operations.md, HTTPS): this server over TLS against nginx
 * (Debian's nginx-light, one worker) serving the same bytes over TLS with the
 * same certificate (ECDSA P-256), both on core 0, wrk on core 1; runs of the
 * two alternate, and each figure is the median of 3 runs of 10 s (1 of 3 s
 * with --quick):
 * - T1, small answers over TLS keep-alive (`SMALL_MIX`, 64 connections);
 * - T2, new TLS connections: one small answer per connection (Connection:
 *   close, 32 connections), so each request pays a full handshake;
 * - T3, a big body over TLS (every record as JSON, 4 connections), in MB/s;
 * - T4, with --baseline CLI (another build's dist/src/cli/main.js): the small
 *   answers over plain HTTP, this build against that one.
 * Run: npm run bench -- tls [--quick] [-- --records N] [-- --baseline PATH]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestAuthority } from '../support/certificates.js';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, median, option, recordsOption, round2, startPinned, stop, waitHttps, writeBenchKeys, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { startNginx } from './contenders/nginx.js';
import { SMALL_MIX } from './mix.js';

const quick = process.argv.includes('--quick');
const records = recordsOption(100_000);
const baseline = option('baseline');
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 3 : 10;

const api = (q: string) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`;
interface Workload {
  id: string;
  name: string;
  paths: string[];
  o: WrkOptions;
  /** What is compared: requests or megabytes a second. */
  unit: 'rps' | 'mb_per_s';
}
const WORKLOADS: Workload[] = [
  { id: 'T1', name: 'small answers over TLS keep-alive', paths: SMALL_MIX.map(api), o: { https: true }, unit: 'rps' },
  { id: 'T2', name: 'new TLS connections (one small answer each)', paths: [api('count=1')], o: { https: true, connections: 32, headers: { Connection: 'close' } }, unit: 'rps' },
  { id: 'T3', name: 'a big body over TLS (every record, JSON)', paths: [api('get=json&time=100000')], o: { https: true, connections: 4 }, unit: 'mb_per_s' },
];

interface Side { runs: WrkResult[] }
const pick = (rs: WrkResult[], unit: Workload['unit']) => {
  const m = median(rs.map((r) => r[unit]));
  return { ...rs.find((r) => r[unit] === m)!, runs: rs.map((r) => r[unit]) };
};

const untilHealthy = async (port: number): Promise<void> => {
  const deadline = Date.now() + 180_000;
  while ((await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
};

/** Alternating runs of `a` and `b` on `paths`; each started by its function and stopped after its run. */
async function compare(w: Workload, a: { port: number }, startB: () => Promise<{ port: number; stop(): Promise<void> }>, work: string): Promise<{ a: Side; b: Side }> {
  const sides = { a: { runs: [] as WrkResult[] }, b: { runs: [] as WrkResult[] } };
  wrk(a.port, w.paths, 2, work, w.o); // warm-up
  for (let r = 0; r < RUNS; r++) {
    sides.a.runs.push(wrk(a.port, w.paths, SECONDS, work, w.o));
    const b = await startB();
    try {
      wrk(b.port, w.paths, 2, work, w.o);
      sides.b.runs.push(wrk(b.port, w.paths, SECONDS, work, w.o));
    } finally {
      await b.stop();
    }
  }
  return sides;
}


const work = mkdtempSync(join(tmpdir(), 'proxylist-tls-bench-'));
try {
  const snapshot = join(work, 'snapshot.msgpack');
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, records, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  const authority = new TestAuthority(work);
  const pair = authority.issue('bench');
  const [port, nginxPort, plainPort, basePort] = await freePorts(4);
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', '--tls-cert', pair.cert, '--tls-key', pair.key]);
  const rows: Array<Record<string, unknown>> = [];
  try {
    await waitHttps(port, '/health', work);
    for (const w of WORKLOADS) {
      const sides = await compare(w, { port }, async () => {
        // The bytes the server answers now, served by nginx from files.
        const dir = join(work, `nginx-${w.id}-${Date.now()}`);
        mkdirSync(dir, { recursive: true });
        const { captured } = await captureBodies(port, w.paths, dir, {}, true);
        const child = startNginx(captured, nginxPort, join(dir, 'nginx'), pair);
        await waitHttps(nginxPort, w.paths[0], dir);
        return { port: nginxPort, stop: async () => { await stop(child); rmSync(dir, { recursive: true, force: true }); } };
      }, work);
      const ours = pick(sides.a.runs, w.unit);
      const nginx = pick(sides.b.runs, w.unit);
      const ratio = round2(median(ours.runs) / median(nginx.runs));
      console.error(`${w.id} ${w.name}: ${median(ours.runs)} vs nginx ${median(nginx.runs)} ${w.unit} = ${ratio}x (runs ${ours.runs.join(', ')} / ${nginx.runs.join(', ')}); p99 ${ours.p99_ms} / ${nginx.p99_ms} ms; errors ${ours.errors} / ${nginx.errors}`);
      rows.push({ id: w.id, workload: w.name, unit: w.unit, proxylist: ours, nginx, ratio });
    }
  } finally {
    await stop(server);
  }
  if (baseline) {
    const w: Workload = { id: 'T4', name: 'small answers over plain HTTP, against the baseline build', paths: SMALL_MIX.map(api), o: {}, unit: 'rps' };
    const plain = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(plainPort), '--host', '127.0.0.1', '--log-level', 'warn']);
    try {
      const startBase = async () => {
        const child = startPinned(process.execPath, [baseline, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(basePort), '--host', '127.0.0.1', '--log-level', 'warn']);
        await untilHealthy(basePort);
        return { port: basePort, stop: () => stop(child) };
      };
      await untilHealthy(plainPort);
      const sides = await compare(w, { port: plainPort }, startBase, work);
      const ours = pick(sides.a.runs, 'rps');
      const base = pick(sides.b.runs, 'rps');
      const ratio = round2(median(ours.runs) / median(base.runs));
      console.error(`T4 ${w.name}: ${median(ours.runs)} vs ${median(base.runs)} req/s = ${ratio}x (runs ${ours.runs.join(', ')} / ${base.runs.join(', ')})`);
      rows.push({ id: 'T4', workload: w.name, unit: 'rps', proxylist: ours, baseline: base, ratio });
    } finally {
      await stop(plain);
    }
  }
  writeResult(quick ? 'tls-quick' : 'tls', { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, records, runs: RUNS, seconds: SECONDS, rows }, false);
  console.log('| # | workload | unit | proxylist | other | ratio |\n|---|---|---|---|---|---|');
  for (const r of rows) {
    const other = (r.nginx ?? r.baseline) as { runs: number[] };
    console.log(`| ${r.id} | ${r.workload} | ${r.unit === 'rps' ? 'req/s' : 'MB/s'} | ${median((r.proxylist as { runs: number[] }).runs).toLocaleString('en')} | ${median(other.runs).toLocaleString('en')} (${r.nginx ? 'nginx' : 'baseline'}) | ${r.ratio} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
