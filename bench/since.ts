/**
 * Change sets (README, Changes since a cursor), the targets D1 to D4:
 * - D1: a million records, then a snapshot where 5% of them changed (a third
 *   dropped, a third checked again with new values, as many new ones as a
 *   third): the unfiltered JSON change set's bytes against the full body's,
 *   and the time to work it out and render it (in this process, medians of 7);
 * - D2: the memory of the history at that size, per record;
 * - D3: the reload of each of 5 such snapshots: the load with the history
 *   carried over, and the merge alone timed again on the same two stores
 *   (so the load without it is the difference);
 * - D4: the real server on core 0 with 200,000 records; 10,000 `since` +
 *   `wait=60` requests on 50 selections held on loopback connections; a new
 *   snapshot renamed in: how long until every one has its 200, and how many
 *   change sets were worked out for them (/metrics); from the swap (when
 *   /health names the new snapshot) to the first byte of each answer.
 * Run: npm run bench:since [-- --records N] [-- --held-only]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/log.js';
import { computeChanges } from '../src/query/changes.js';
import { cursorOf } from '../src/query/cursor.js';
import { execute } from '../src/query/execute.js';
import { parsePlan } from '../src/query/parse.js';
import type { Plan } from '../src/query/plan.js';
import { readQuery } from '../src/query/query-string.js';
import { QueryScratch } from '../src/query/scratch.js';
import { BodyWriter } from '../src/render/body.js';
import { OutputBuffer } from '../src/render/output-buffer.js';
import { encodeSnapshot, evolveRecords, generateRecords } from '../src/snapshot/generate.js';
import type { SnapshotRecord } from '../src/snapshot/format.js';
import { SnapshotFeed } from '../src/snapshot/snapshot-feed.js';
import { carryHistory } from '../src/store/history.js';
import type { Store } from '../src/store/store.js';
import { freePorts } from '../test/helpers/cli.js';
import { holdRequests, metricNow, statusCounts } from './held.js';
import { BENCH_KEY, CLI, SERVER_CORE, median, round2, sleep, stop, waitFor, writeBenchKeys, writeResult } from './harness.js';

const arg = process.argv.indexOf('--records');
const RECORDS = arg > 0 ? Number(process.argv[arg + 1]) : 1_000_000;
const HELD_RECORDS = 200_000;
const RELOADS = 5;
const SHARE = 0.05;
const HELD = 10_000;
const SELECTIONS = 50;
const now = Math.floor(Date.now() / 1000);

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-since-'));

/** Snapshot files, each 5% changed from the one before; their generated_at a minute apart. */
function versions(records: number, count: number, seed: number): string[] {
  let recs: SnapshotRecord[] = generateRecords({ records, seed, now: now - count * 60 });
  return Array.from({ length: count }, (_, v) => {
    if (v > 0) recs = evolveRecords(recs, { seed: seed + v * 7, share: SHARE, now: now - (count - v) * 60 });
    const file = join(work, `s${seed}-v${v}.msgpack`);
    writeFileSync(file, encodeSnapshot(recs, now - (count - v) * 60));
    return file;
  });
}

const plan = (q: string, store: Store): Plan => {
  const parsed = parsePlan(readQuery(q), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.plan;
};

async function inProcess(): Promise<Record<string, unknown>> {
  const files = versions(RECORDS, RELOADS + 1, 11);
  const path = join(work, 'snapshot.msgpack');
  renameSync(files[0], path);
  const feed = new SnapshotFeed(path, systemClock, createLogger('silent'));
  const stores: Store[] = [];
  feed.onSwap((s) => stores.push(s));
  await feed.start();
  while (stores.length === 0) await sleep(5);

  // Unfiltered: every record of the hour the snapshot spans is in the window.
  const query = 'get=json&time=86400';
  const nowS = Math.floor(Date.now() / 1000);
  const cursor = cursorOf(stores[0], plan(query, stores[0]), nowS);
  const loads: number[] = [];
  const merges: number[] = [];
  for (let v = 1; v <= RELOADS; v++) {
    renameSync(files[v], path);
    while (stores.length === v) await sleep(5);
    loads.push(feed.lastLoadMs);
    const t0 = performance.now();
    await carryHistory(stores[v - 1], stores[v].c, stores[v].meta, Date.now(), 3600_000);
    merges.push(performance.now() - t0);
  }

  // D1 on the first change: the cursor of version 0 against version 1 (kept to measure on).
  const store = stores[1];
  const scratch = new QueryScratch();
  const full = plan(query, store);
  const end = store.prefixEnd(nowS - full.time);
  const n = execute(store, full, end, scratch);
  const fullWriter = new BodyWriter(store, full, scratch.rows, n, nowS * 1000);
  const fullBytes = fullWriter.frameLength() + fullWriter.rowsLength(0, fullWriter.n);
  const since = plan(`${query}&since=${cursor}`, store);
  const out = new OutputBuffer();
  const times: number[] = [];
  const computeTimes: number[] = [];
  let bytes = 0;
  let upserts = 0;
  let removes = 0;
  for (let run = 0; run < 7; run++) {
    const t0 = performance.now();
    const c = computeChanges(store, since, nowS, scratch);
    computeTimes.push(performance.now() - t0);
    const writer = new BodyWriter(store, since, scratch.rows, c.n, nowS * 1000, { cursor: cursorOf(store, since, nowS), reset: c.reset, removes: c.removes });
    out.reset();
    writer.write(out, 0, c.n);
    times.push(performance.now() - t0);
    bytes = out.pos;
    upserts = c.n;
    removes = c.removes.length;
    if (c.reset) throw new Error('a reset where a change set was expected');
  }
  const last = stores[RELOADS];
  const historyBytes = last.history.changedAt.byteLength + last.c.addrPrint.byteLength + last.history.leftBytes;
  await feed.close();
  return {
    records: store.rows,
    D1_full_json_bytes: fullBytes,
    D1_change_set_bytes: bytes,
    D1_bytes_share: round2((bytes / fullBytes) * 100) / 100,
    D1_upserts: upserts,
    D1_removes: removes,
    D1_ms_median: round2(median(times)),
    D1_ms_max: round2(Math.max(...times)),
    D1_compute_ms_median: round2(median(computeTimes)),
    D2_history_bytes: historyBytes,
    // Each row's snapshot number, and the print of its values in the columns, which only the history reads.
    D2_bytes_per_record: round2((last.history.changedAt.byteLength + last.c.addrPrint.byteLength) / last.rows),
    D2_keys_left_remembered: last.history.leftBytes / 8,
    D2_snapshots_remembered: last.history.snapshots.length,
    D3_load_ms_each: loads.map(Math.round),
    D3_merge_ms_each: merges.map(Math.round),
    D3_load_with_over_without: round2(median(loads) / (median(loads) - median(merges))),
  };
}

async function heldRequests(): Promise<Record<string, unknown>> {
  const [first, next] = versions(HELD_RECORDS, 2, 21);
  const snapshot = join(work, 'held.msgpack');
  const keys = join(work, 'keys.json');
  renameSync(first, snapshot);
  writeBenchKeys(keys);
  const [port] = await freePorts(1);
  // Its log tells how long each load took, to the swap: /health answers late while the server writes thousands of answers.
  const server = spawn('taskset', ['-c', SERVER_CORE, process.execPath, CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const loads: number[] = [];
  createInterface({ input: server.stdout! }).on('line', (line) => {
    const entry = JSON.parse(line) as { event?: string; ms?: number };
    if (entry.event === 'snapshot_loaded') loads.push(entry.ms!);
  });
  try {
    await waitFor(`http://127.0.0.1:${port}/health`, 60_000, (s) => s === 200);
    const types = ['http', 'https', 'socks4', 'socks5', 'http,https'];
    const countries = ['US', 'DE', 'RU', 'BR', 'CN', 'IN', 'FR', 'NL', 'GB', 'JP'];
    const queries = Array.from({ length: SELECTIONS }, (_, i) => `get=${i % 2 ? 'txt' : 'json'}&type=${types[i % 5]}&country=${countries[Math.floor(i / 5)]}&time=86400`);
    const paths: string[] = [];
    for (const q of queries) {
      const res = await fetch(`http://127.0.0.1:${port}/api?key=${BENCH_KEY}&${q}`);
      await res.arrayBuffer();
      paths.push(`/api?key=${BENCH_KEY}&${q}&wait=60&since=${res.headers.get('list-cursor')}`);
    }
    const holders = await holdRequests(port, HELD, (i) => `GET ${paths[i % paths.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const deadline = Date.now() + 60_000;
    while ((await metricNow(port, 'proxylist_requests_held')) < HELD && Date.now() < deadline) await sleep(200);
    const held = await metricNow(port, 'proxylist_requests_held');
    const before = await metricNow(port, 'proxylist_change_sets_total');
    const renamedAt = performance.now();
    renameSync(next, snapshot);
    while ((holders.some((h) => h.answeredAt === 0) || loads.length < 2) && performance.now() - renamedAt < 30_000) await sleep(20);
    await sleep(500);
    // The load's own time, from the change seen to the swap (the watcher's short debounce before it is left in).
    const swappedAt = renamedAt + loads[1];
    const answered = holders.map((h) => (h.answeredAt === 0 ? Infinity : h.answeredAt - swappedAt));
    const statuses = statusCounts(holders);
    for (const h of holders) h.socket.destroy();
    const computed = (await metricNow(port, 'proxylist_change_sets_total')) - before;
    return {
      records: HELD_RECORDS,
      held_requests: held,
      selections: SELECTIONS,
      load_ms: Math.round(loads[1]),
      D4_all_answered_within_ms_of_swap: Math.round(Math.max(...answered)),
      D4_median_answered_ms: Math.round(median(answered)),
      bytes_sent_mb: Math.round(holders.reduce((n, h) => n + h.bytes, 0) / 1048576),
      D4_change_sets_worked_out: computed,
      statuses_after_swap: statuses,
    };
  } finally {
    await stop(server);
  }
}

try {
  const d1to3 = process.argv.includes('--held-only') ? {} : await inProcess();
  const d4 = await heldRequests();
  writeResult('since', { date: new Date().toISOString(), ...d1to3, held: d4 });
} finally {
  rmSync(work, { recursive: true, force: true });
}
