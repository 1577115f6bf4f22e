/**
 * The cost of ETags on the small answers (X5), in one run, alternating:
 * - this server against the same service built from `--baseline REV`
 *   (default: the last revision before ETags), both answering `SMALL_MIX`;
 * - this server with every request carrying an If-None-Match that does not
 *   match, against the same without it.
 * wrk 1 thread x 64 connections on core 1, servers on core 0; the median of
 * 5 runs of 10 s. Needs a git checkout (the baseline is built in a worktree).
 * Run: npm run bench -- etag [--baseline REV]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, CLI, generateSnapshot, median, option, round2, startPinned, stop, waitFor, writeBenchKeys, writeResult, wrk, type WrkOptions } from './harness.js';
import { SMALL_MIX } from './mix.js';

/** By default the last revision whose answers carry no ETag: the parent of the one that added src/query/etag.ts. */
const added = execFileSync('git', ['log', '--diff-filter=A', '--format=%h', '--', 'src/query/etag.ts']).toString().trim().split('\n').pop();
const BASELINE = option('baseline') ?? `${added}^`;
const RECORDS = 100_000;
const RUNS = 5;
const SECONDS = 10;
const NOT_MATCHING = { 'If-None-Match': 'W/"not-this-one"' };

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-etag-'));
const tree = join(work, 'baseline');
try {
  execFileSync('git', ['worktree', 'add', '--detach', tree, BASELINE], { stdio: 'ignore' });
  symlinkSync(resolve('node_modules'), join(tree, 'node_modules'));
  execFileSync(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', join(tree, 'tsconfig.json')]);
  const snapshot = join(work, 'snapshot.msgpack');
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, RECORDS, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  const ports = await freePorts(2);
  const clis = [CLI, join(tree, 'dist', 'src', 'cli', 'main.js')];
  const servers = clis.map((cli, i) => startPinned(process.execPath, [cli, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(ports[i]), '--host', '127.0.0.1', '--log-level', 'warn']));
  try {
    await Promise.all(ports.map((p) => waitFor(`http://127.0.0.1:${p}/health`, 60_000, (s) => s === 200)));
    const paths = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}&${q}`);
    const contenders: Array<{ name: string; port: number; o: WrkOptions }> = [
      { name: 'this server', port: ports[0], o: {} },
      { name: `baseline ${BASELINE} (no ETags)`, port: ports[1], o: {} },
      { name: 'this server, If-None-Match not matching', port: ports[0], o: { headers: NOT_MATCHING } },
    ];
    for (const c of contenders) wrk(c.port, paths, 3, work, c.o); // warm-up
    const runs = contenders.map(() => [] as number[]);
    for (let r = 0; r < RUNS; r++) contenders.forEach((c, i) => runs[i].push(wrk(c.port, paths, SECONDS, work, c.o).rps));
    const rps = runs.map((xs) => median(xs));
    const result = {
      date: new Date().toISOString(),
      records: RECORDS,
      contenders: contenders.map((c, i) => ({ name: c.name, rps: rps[i], runs_rps: runs[i] })),
      etag_vs_baseline: round2(rps[0] / rps[1]),
      if_none_match_vs_none: round2(rps[2] / rps[0]),
    };
    writeResult('etag-cost', result);
  } finally {
    await Promise.all(servers.map(stop));
  }
} finally {
  execFileSync('git', ['worktree', 'remove', '--force', tree], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
}
