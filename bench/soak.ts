/**
 * Soak: 100 snapshot reloads and at least 1,000,000 requests over the query
 * mix, with the server's RSS and heap read from its /metrics. The first 10
 * reloads and 100,000 requests are warm-up; RSS must then grow by at most 10%.
 * Server on core 0, wrk on core 1, a checker publishing (temp file + rename)
 * in this process.
 * Run: npm run bench -- soak [--records N]
 */
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_KEY, CLI, generateSnapshot, recordsOption, serverMemory, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult, type WrkResult } from './harness.js';
import { QUERY_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const RECORDS = recordsOption(100_000);
const RELOADS = 100;
const WARM_RELOADS = 10;
const REQUESTS = 1_000_000;
const WARM_REQUESTS = 100_000;

const work = mkdtempSync(join(tmpdir(), 'proxylist-soak-'));
const path = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
const now = Math.floor(Date.now() / 1000);
const versions = [1, 2, 3].map((seed) => {
  const file = join(work, `v${seed}.msgpack`);
  generateSnapshot(file, RECORDS, now, seed);
  return file;
});
copyFileSync(versions[0], path);
writeBenchKeys(keys);
const paths = QUERY_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
const [port] = await freePorts(1);
const health = async () => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { reloads: { ok: number; failed: number } }).reloads;

/** Publishes version i like a checker: a temporary file in the folder, renamed over the path; waits until it is served. */
async function publish(i: number): Promise<void> {
  const before = (await health()).ok;
  copyFileSync(versions[i % versions.length], `${path}.tmp`);
  renameSync(`${path}.tmp`, path);
  while ((await health()).ok === before) await sleep(50);
}

const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', path, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
try {
  await waitFor(`http://127.0.0.1:${port}/health`, 120_000, (s) => s === 200);
  const phases: Array<{ phase: string; reloads: number; requests: number; rss_mb: number; heap_used_mb: number }> = [];
  let requests = 0;
  let reloads = 0;
  let errors = 0;
  const runs: WrkResult[] = [];
  // Load in slices of about 10 s; reloads spread over the slices.
  const slice = async (publishes: number) => {
    const load = startWrk(port, paths, work);
    const started = Date.now();
    for (let i = 0; i < publishes; i++) await publish(++reloads);
    await sleep(Math.max(0, 10_000 - (Date.now() - started)));
    const r = await load.finish();
    runs.push(r);
    requests += r.requests;
    errors += r.errors;
  };
  const note = async (phase: string) => {
    const m = await serverMemory(port);
    phases.push({ phase, reloads, requests, ...m });
    console.error(`${phase}: ${reloads} reloads, ${requests} requests, RSS ${m.rss_mb} MB, heap ${m.heap_used_mb} MB`);
  };
  await note('start');
  while (reloads < WARM_RELOADS || requests < WARM_REQUESTS) await slice(Math.min(2, WARM_RELOADS - reloads));
  await note('after warm-up');
  while (reloads < RELOADS || requests < REQUESTS) {
    await slice(Math.min(3, RELOADS - reloads));
    if (runs.length % 5 === 0) await note(`slice ${runs.length}`);
  }
  await sleep(3000);
  await note('end');
  const warm = phases.find((p) => p.phase === 'after warm-up')!;
  const end = phases.at(-1)!;
  const failedReloads = (await health()).failed;
  const growth = Math.round(((end.rss_mb - warm.rss_mb) / warm.rss_mb) * 1000) / 10;
  const result = {
    date: new Date().toISOString(),
    records: RECORDS,
    reloads,
    reloads_failed: failedReloads,
    requests,
    wrk_errors: errors,
    start: phases[0],
    after_warm_up: warm,
    end,
    rss_growth_after_warm_up_percent: growth,
    within_10_percent: growth <= 10,
    samples: phases,
  };
  writeResult('soak', result);
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
