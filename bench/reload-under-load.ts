/**
 * T9: 10 reloads of a 1,000,000-record snapshot while wrk drives the query
 * mix: no failed response, and p99 against a run without reloads. A checker
 * process publishes each version (copy to a temporary file, rename over the
 * path) as soon as the previous one is being served. Server on core 0 (its
 * build worker too), wrk on core 1.
 * Run: npm run bench -- reload-load
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_KEY, CLI, generateSnapshot, round2, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult, wrk } from './harness.js';
import { QUERY_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const RELOADS = 10;
const work = mkdtempSync(join(tmpdir(), 'proxylist-reload-load-'));
const path = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
const now = Math.floor(Date.now() / 1000);
const versions = [join(work, 'a.msgpack'), join(work, 'b.msgpack')];
versions.forEach((file, i) => generateSnapshot(file, 1_000_000, now, i + 1));
execFileSync('cp', [versions[0], path]);
writeBenchKeys(keys);
const paths = QUERY_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
const [port] = await freePorts(1);
const reloadsOk = async () => ((await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { reloads: { ok: number; failed: number } }).reloads;

const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', path, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
try {
  await waitFor(`http://127.0.0.1:${port}/health`, 120_000, (s) => s === 200);
  wrk(port, paths, 3, work); // warm-up
  const baseline = wrk(port, paths, 30, work);
  console.error(`without reloads: ${JSON.stringify(baseline)}`);

  const load = startWrk(port, paths, work);
  const started = Date.now();
  const first = await reloadsOk();
  for (let i = 1; i <= RELOADS; i++) {
    execFileSync('sh', ['-c', `cp "${versions[i % 2]}" "${path}.tmp" && mv "${path}.tmp" "${path}"`]);
    while ((await reloadsOk()).ok < first.ok + i) await sleep(200);
    console.error(`reload ${i} served after ${Math.round((Date.now() - started) / 1000)} s`);
  }
  const during = await load.finish();
  const after = await reloadsOk();
  const result = {
    date: new Date().toISOString(),
    records: 1_000_000,
    reloads: after.ok - first.ok,
    reloads_failed: after.failed - first.failed,
    seconds_for_10_reloads: Math.round((Date.now() - started) / 1000),
    without_reloads: baseline,
    with_reloads: during,
    p99_ratio: round2(during.p99_ms / baseline.p99_ms),
  };
  writeResult('reload-under-load', result);
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
