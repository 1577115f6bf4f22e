/**
 * Refusals must be cheap: throughput of the real server when 90% of requests
 * are refused by the limits, against the same mix all accepted. The server
 * runs pinned to one core, wrk (64 connections, 10 s) to the other.
 * Run: npm run bench -- limits   (needs wrk and taskset)
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { round2, writeResult } from './harness.js';

const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const LUA = fileURLToPath(new URL('../../bench/wrk/rotate.lua', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'proxylist-limits-'));
const [port] = await freePorts(1);
const snapshot = join(dir, 'snapshot.msgpack');
const keys = join(dir, 'keys.json');
execFileSync(process.execPath, [CLI, 'snapshot', 'generate', '--records', '100000', '--out', snapshot]);
const capped = Array.from({ length: 1000 }, (_, i) => `capped-${i}`);
writeFileSync(keys, JSON.stringify({ keys: [{ key: 'open', limits: { per_window: null, daily: null, subnets: null } }, ...capped.map((key) => ({ key }))] }));

const server = spawn('taskset', ['-c', '0', process.execPath, CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn'], { stdio: 'ignore' });
const query = 'type=http&count=100';

function wrk(paths: string[]): { rps: number; p99: string } {
  const file = join(dir, 'paths.txt');
  writeFileSync(file, paths.join('\n') + '\n');
  const out = execFileSync('taskset', ['-c', '1', 'wrk', '-t', '2', '-c', '64', '-d', '10s', '--latency', '-s', LUA, `http://127.0.0.1:${port}`], { env: { ...process.env, PATHS: file } }).toString();
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), p99: /99%\s+(\S+)/.exec(out)![1] };
}

try {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) break;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const accepted = wrk([`/api?key=open&${query}`]);
  // 9 in 10 requests use a capped key: after its first 2 it is refused (429).
  const mixed = wrk(Array.from({ length: 100 }, (_, i) => (i % 10 === 0 ? `/api?key=open&${query}` : `/api?key=${capped[i]}&${query}`)));
  const result = { date: new Date().toISOString(), query, all_accepted: accepted, ninety_percent_refused: mixed, ratio: round2(mixed.rps / accepted.rps) };
  writeResult('limits-throughput', result);
} finally {
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
