/**
 * T3: latency at a fixed offered rate on the query mix over 100,000 records,
 * for this server (cache on) and for the uWS ceiling. wrk paces each of its
 * 64 connections (a Lua delay), so the offered rate is fixed; unlike wrk2 it
 * does not correct for coordinated omission, so rates near or above a
 * server's capacity understate its tail. Servers on core 0, wrk on core 1.
 * Run: npm run bench -- rate
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, startPinned, stop, waitFor, wrk, writeBenchKeys, writeResult } from './harness.js';
import { QUERY_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const RATES = [10_000, 5_000, 2_000];
const work = mkdtempSync(join(tmpdir(), 'proxylist-rate-'));
const snapshot = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
generateSnapshot(snapshot, 100_000, Math.floor(Date.now() / 1000));
writeBenchKeys(keys);
const paths = QUERY_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
const [port, ceilingPort] = await freePorts(2);

const results: Record<string, unknown[]> = {};
const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
try {
  await waitFor(`http://127.0.0.1:${port}/health`, 120_000, (s) => s === 200);
  // The ceiling answers with this server's bodies.
  const { index } = await captureBodies(port, paths, work);
  const ceiling = startPinned(process.execPath, [fileURLToPath(new URL('./contenders/ceiling.js', import.meta.url)), index, String(ceilingPort)]);
  try {
    await waitFor(`http://127.0.0.1:${ceilingPort}${paths[0]}`, 30_000, (s) => s === 200);
    for (const [name, target] of [['proxylist, cache on', port], ['uWS ceiling', ceilingPort]] as const) {
      results[name] = [];
      wrk(target, paths, 2, work); // warm-up
      for (const rate of RATES) {
        const r = wrk(target, paths, 10, work, { rate });
        const row = { offered: rate, achieved: r.rps, p50_ms: r.p50_ms, p99_ms: r.p99_ms, p999_ms: r.p999_ms, errors: r.errors };
        results[name].push(row);
        console.error(`${name} @ ${rate}/s: ${JSON.stringify(row)}`);
      }
    }
  } finally {
    await stop(ceiling);
  }
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
const doc = { date: new Date().toISOString(), records: 100_000, connections: 64, seconds: 10, results };
writeResult('fixed-rate', doc, false);
console.log(JSON.stringify(doc, null, 2));
