/**
 * Memory of a reload as an operator sees it (P7): the real server, on core 0,
 * answers the real mix (bench/mix.ts) from wrk on core 1 while a checker
 * publishes 5 new versions of a 1,000,000-record snapshot. The server's RSS
 * is read from /proc every 10 ms. Three steady levels are reported, each
 * with the peaks over it: loaded and idle, settled under the mix before any
 * reload, and settled under the mix between reloads (the second before each
 * publish, from the second on), which is what a container runs at.
 * Run: npm run bench -- reload-rss [--records N]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_KEY, CLI, generateSnapshot, median, recordsOption, round2, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult } from './harness.js';
import { REAL_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const records = recordsOption(1_000_000);
const RELOADS = 5;
/** Seconds of the mix before the first reload, and between reloads: RSS under the mix stops growing within them. */
const SETTLE_S = Number(process.env.SETTLE_S ?? 30);
const BETWEEN_S = 8;

const work = mkdtempSync(join(tmpdir(), 'proxylist-reload-rss-'));
const path = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
const now = Math.floor(Date.now() / 1000);
const versions = Array.from({ length: RELOADS + 1 }, (_, i) => join(work, `v${i}.msgpack`));
versions.forEach((file, i) => generateSnapshot(file, records, now, i + 1));
execFileSync('cp', [versions[0], path]);
writeBenchKeys(keys);
const paths = REAL_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
const [port] = await freePorts(1);
const base = `http://127.0.0.1:${port}`;

const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', path, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
/** The server's RSS in MB (taskset execs it: same pid). */
const rss = (): number => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024);
const reloadsOk = async (): Promise<number> => ((await (await fetch(`${base}/health`)).json()) as { reloads: { ok: number } }).reloads.ok;
/** The median of samples taken every 100 ms for `ms`. */
async function settledRss(ms: number): Promise<number> {
  const samples: number[] = [];
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) samples.push(rss());
  return median(samples);
}

try {
  await waitFor(`${base}/health`, 120_000, (s) => s === 200);
  const idle = await settledRss(1000);
  const load = startWrk(port, paths, work);
  await sleep((SETTLE_S - 2) * 1000);
  const underMix = await settledRss(2000);
  const peaks: number[] = [];
  const between: number[] = [];
  const loads: number[] = [];
  for (let i = 1; i <= RELOADS; i++) {
    if (i > 1) between.push(await settledRss(1000));
    const before = await reloadsOk();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10);
    const started = Date.now();
    execFileSync('sh', ['-c', `cp "${versions[i]}" "${path}.tmp" && mv "${path}.tmp" "${path}"`]);
    while ((await reloadsOk()) === before) await sleep(20);
    loads.push(Date.now() - started);
    await sleep((BETWEEN_S - 1) * 1000);
    clearInterval(sampler);
    peaks.push(peak);
  }
  const mix = await load.finish();
  const settled = median(between);
  const over = (steady: number) => ({ steady_mb: steady, peak_over_steady_each: peaks.map((p) => round2(p / steady)) });
  writeResult(`reload-rss-${records}`, {
    date: new Date().toISOString(),
    records,
    reloads: RELOADS,
    rss_peak_each_mb: peaks,
    publish_to_served_ms_each: loads,
    loaded_idle: over(idle),
    under_the_mix_before_reloads: over(underMix),
    under_the_mix_between_reloads: over(settled),
    mix_requests_per_s: mix.rps,
    mix_errors: mix.errors,
  });
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
