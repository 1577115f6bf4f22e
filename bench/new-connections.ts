/**
 * One client alone, asking small queries one after another, each on a new
 * connection (`Connection: close`): this server (defaults) against the bare
 * uWebSockets.js ceiling serving the same bytes, alternating, 3 runs of
 * 10 s. Reported: p50 and p99 of each, and their ratios (P6 of the
 * performance targets: p99 at most 2x the ceiling's). wrk counts each
 * connection the server closes as a read error, so errors are not reported.
 * Servers on core 0, wrk on core 1.
 * Run: npm run bench -- new-connections
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, benchFiles, captureBodies, median, round2, startPinned, startServer, stop, waitFor, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { SMALL_MIX } from './mix.js';

const RECORDS = 100_000;
const RUNS = 3;
const SECONDS = 10;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const work = mkdtempSync(join(tmpdir(), 'proxylist-new-connections-'));
try {
  const { snapshot, keys } = benchFiles(work, 'snapshot', RECORDS);
  const [serverPort, ceilingPort] = await freePorts(2);
  const server = startServer(snapshot, keys, serverPort);
  let ceiling = null;
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 120_000, (s) => s === 200);
    const paths = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}&${q}`);
    const dir = join(work, 'bodies');
    mkdirSync(dir);
    const { index } = await captureBodies(serverPort, paths, dir);
    ceiling = startPinned(process.execPath, [here('./contenders/ceiling.js'), index, String(ceilingPort)]);
    await waitFor(`http://127.0.0.1:${ceilingPort}${paths[0]}`, 60_000, (s) => s === 200);
    const o: WrkOptions = { connections: 1, headers: { Connection: 'close' } };
    wrk(serverPort, paths, 2, work, o);
    wrk(ceilingPort, paths, 2, work, o);
    const ours: WrkResult[] = [];
    const top: WrkResult[] = [];
    for (let r = 0; r < RUNS; r++) {
      ours.push(wrk(serverPort, paths, SECONDS, work, o));
      top.push(wrk(ceilingPort, paths, SECONDS, work, o));
    }
    const sum = (rs: WrkResult[]) => ({ rps: median(rs.map((x) => x.rps)), p50_ms: median(rs.map((x) => x.p50_ms)), p99_ms: median(rs.map((x) => x.p99_ms)), runs_p99_ms: rs.map((x) => x.p99_ms) });
    const a = sum(ours);
    const b = sum(top);
    const result = { date: new Date().toISOString(), records: RECORDS, runs: RUNS, seconds: SECONDS, proxylist: a, ceiling: b, p50_ratio: round2(a.p50_ms / b.p50_ms), p99_ratio: round2(a.p99_ms / b.p99_ms) };
    writeResult('new-connections', result);
  } finally {
    await stop(server);
    if (ceiling) await stop(ceiling);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
