/**
 * Held requests (X4): 10,000 `wait=60` requests held by one server, on
 * loopback connections, while a client sends the small-answer mix.
 * Reported: the server's RSS per held request; how long after a new
 * snapshot is renamed in every held request has its 200; and the small
 * queries' p99 with and without the held requests, and its ratio.
 * Server on core 0, wrk on core 1.
 * Run: npm run bench -- wait [--held N]
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, CLI, generateSnapshot, round2, sleep, startPinned, stop, waitFor, writeBenchKeys, writeResult, wrk } from './harness.js';
import { SMALL_MIX } from './mix.js';
import { holdRequests, metricNow, statusCounts } from './held.js';

const arg = process.argv.indexOf('--held');
const HELD = arg > 0 ? Number(process.argv[arg + 1]) : 10_000;
const RECORDS = 100_000;
const SECONDS = 10;
/** The small queries are offered at a fixed rate, so that their latency, not the server's saturation, is compared. */
const SMALL = { connections: 16, rate: 2000 };
const HELD_QUERY = 'count=5&wait=60';

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-wait-'));
try {
  const snapshot = join(work, 'snapshot.msgpack');
  const keys = join(work, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  generateSnapshot(snapshot, RECORDS, now, 1);
  writeBenchKeys(keys);
  const next = join(work, 'next', 'snapshot.msgpack');
  mkdirSync(join(work, 'next'));
  generateSnapshot(next, RECORDS, now, 2);
  const [port] = await freePorts(1);
  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 60_000, (s) => s === 200);
    const paths = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}&${q}`);
    wrk(port, paths, 3, work, SMALL); // warm-up
    const without = wrk(port, paths, SECONDS, work, SMALL);

    const first = await fetch(`http://127.0.0.1:${port}/api?key=${BENCH_KEY}&count=5`);
    await first.arrayBuffer();
    const etag = first.headers.get('etag')!;
    await sleep(1000);
    const rssBefore = rssMb(server.pid!);
    const request = `GET /api?key=${BENCH_KEY}&${HELD_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: ${etag}\r\n\r\n`;
    const holders = await holdRequests(port, HELD, () => request);
    const deadline = Date.now() + 60_000;
    while ((await metricNow(port, 'proxylist_requests_held')) < HELD && Date.now() < deadline) await sleep(200);
    const held = await metricNow(port, 'proxylist_requests_held');
    await sleep(1000);
    const rssHeld = rssMb(server.pid!);
    const meanwhile = wrk(port, paths, SECONDS, work, SMALL);

    const renamedAt = performance.now();
    renameSync(next, snapshot);
    while (holders.some((h) => h.answeredAt === 0) && performance.now() - renamedAt < 30_000) await sleep(20);
    const latest = Math.max(...holders.map((h) => (h.answeredAt === 0 ? Infinity : h.answeredAt - renamedAt)));
    const statuses = statusCounts(holders);
    for (const h of holders) h.socket.destroy();

    const result = {
      date: new Date().toISOString(),
      records: RECORDS,
      held_requests: held,
      rss_per_held_request_kb: round2(((rssHeld - rssBefore) * 1024) / held),
      rss_before_mb: Math.round(rssBefore),
      rss_held_mb: Math.round(rssHeld),
      all_answered_within_ms_of_rename: Math.round(latest),
      statuses_after_swap: statuses,
      small_without_held: without,
      small_with_held: meanwhile,
      small_p99_ratio: round2(meanwhile.p99_ms / without.p99_ms),
    };
    writeResult('wait', result);
  } finally {
    await stop(server);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
