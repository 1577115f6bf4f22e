/**
 * The two stacks the service runs on (docs/operations.md, Where it runs), in one run:
 * Node 20 with uWebSockets.js v20.30 (this process's Node, on a C library
 * too old for v20.57) and Node 24 with v20.57 (the binary given, such as
 * `.ci/node24` prepares). Each serves the small answers (`SMALL_MIX`) beside
 * a ceiling on its own Node and build (a bare uWebSockets.js app serving the
 * same bytes); the four alternate, median of 3 runs of 10 s. Reported: each
 * stack's ratio to its own ceiling, and Node 24's throughput over Node 20's.
 * Run: npm run bench -- runtimes --node24 PATH [--records N]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, captureBodies, CLI, generateSnapshot, median, option, recordsOption, round2, startPinned, stop, waitFor, writeBenchKeys, writeResult, wrk, type WrkResult } from './harness.js';
import { SMALL_MIX } from './mix.js';

const NODE24 = option('node24');
if (!NODE24) throw new Error('usage: npm run bench -- runtimes --node24 PATH (.ci/node24 FOLDER prepares one)');
const RECORDS = recordsOption(100_000);
const RUNS = 3;
const SECONDS = 10;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const work = mkdtempSync(join(tmpdir(), 'proxylist-runtimes-'));
const snapshot = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
generateSnapshot(snapshot, RECORDS, Math.floor(Date.now() / 1000));
writeBenchKeys(keys);
const paths = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
const stacks = [
  { name: 'node20', node: process.execPath },
  { name: 'node24', node: NODE24 },
].map((s) => ({ ...s, version: execFileSync(s.node, ['--version']).toString().trim() }));
const ports = await freePorts(4);
const children = [];
try {
  const contenders: Array<{ stack: string; kind: 'proxylist' | 'ceiling'; port: number }> = [];
  for (const [i, s] of stacks.entries()) {
    const port = ports[2 * i];
    children.push(startPinned(s.node, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']));
    await waitFor(`http://127.0.0.1:${port}/health`, 120_000, (st) => st === 200);
    const dir = join(work, `bodies-${s.name}`);
    mkdirSync(dir);
    const { index } = await captureBodies(port, paths, dir);
    children.push(startPinned(s.node, [here('./contenders/ceiling.js'), index, String(ports[2 * i + 1])]));
    await waitFor(`http://127.0.0.1:${ports[2 * i + 1]}${paths[0]}`, 60_000, (st) => st === 200);
    contenders.push({ stack: s.name, kind: 'proxylist', port }, { stack: s.name, kind: 'ceiling', port: ports[2 * i + 1] });
  }
  for (const c of contenders) wrk(c.port, paths, 2, work); // warm-up
  const runs = new Map<(typeof contenders)[number], WrkResult[]>(contenders.map((c) => [c, []]));
  for (let r = 0; r < RUNS; r++) for (const c of contenders) runs.get(c)!.push(wrk(c.port, paths, SECONDS, work));
  const rps = (stack: string, kind: string) => median(runs.get(contenders.find((c) => c.stack === stack && c.kind === kind)!)!.map((x) => x.rps));
  const p99 = (stack: string, kind: string) => median(runs.get(contenders.find((c) => c.stack === stack && c.kind === kind)!)!.map((x) => x.p99_ms));
  const rows = stacks.map((s) => ({
    stack: s.name, node: s.version,
    proxylist_rps: rps(s.name, 'proxylist'), ceiling_rps: rps(s.name, 'ceiling'),
    ratio: round2(rps(s.name, 'proxylist') / rps(s.name, 'ceiling')),
    proxylist_p99_ms: p99(s.name, 'proxylist'), ceiling_p99_ms: p99(s.name, 'ceiling'),
  }));
  const doc = {
    date: new Date().toISOString(), records: RECORDS, runs: RUNS, seconds: SECONDS, workload: 'small answers',
    stacks: rows,
    node24_over_node20: { proxylist: round2(rows[1].proxylist_rps / rows[0].proxylist_rps), ceiling: round2(rows[1].ceiling_rps / rows[0].ceiling_rps) },
  };
  writeResult('runtimes', doc);
} finally {
  for (const c of children) await stop(c);
  rmSync(work, { recursive: true, force: true });
}
