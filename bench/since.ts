/**
 * Change sets (docs/api.md, Keeping a list), with the defaults:
 * - exactness: a million records, then a snapshot where 3% of them changed
 *   (ping, works, checked now), 1% left and 1% arrived. For six selections,
 *   the change set against the true difference of the two full lists,
 *   worked out here from the two stores alone: entries and bytes, and the
 *   time to work the change set out (medians of 7, in this process);
 * - history: the history's bytes after 30 such snapshots (5% changed each),
 *   and the load time of each, with the history carried over;
 * - held on 50 selections: the real server on core 0 with 200,000 records;
 *   10,000 `since` + `wait=60` requests on 50 selections held on loopback
 *   connections; a snapshot with 5% changed renamed in: how long until every
 *   one has its 200, from the swap;
 * - held on 1,000 distinct selections: 1,000 `since` + `wait=60` requests,
 *   each with a selection of its own (works=95&ping=1 ... ping=1000), over
 *   200,000 records, then a snapshot in which every record changed: the
 *   slowest /health meanwhile, when the last held request got its change
 *   set, the peak RSS against the bound of docs/operations.md, and the worst event-loop
 *   delay the server saw.
 * Run: npm run bench -- since [--records N] [-- --only exact|history|held|distinct]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/log.js';
import { allowFullCollections, fullCollection } from '../src/core/full-collection.js';
import { computeChanges } from '../src/query/changes.js';
import { cursorOf } from '../src/query/cursor.js';
import { execute } from '../src/query/execute.js';
import { parsePlan } from '../src/query/parse.js';
import type { Plan } from '../src/query/plan.js';
import { readQuery } from '../src/query/query-string.js';
import { QueryScratch } from '../src/query/scratch.js';
import { BodyWriter } from '../src/render/envelope.js';
import { OutputBuffer } from '../src/render/output-buffer.js';
import { encodeSnapshot, evolveRecords, generateRecords } from '../src/snapshot/generate.js';
import type { SnapshotRecord } from '../src/snapshot/format.js';
import { SnapshotFeed } from '../src/snapshot/snapshot-feed.js';
import { packKey } from '../src/store/columns.js';
import type { Store } from '../src/store/store.js';
import { TYPES } from '../src/core/vocabulary.js';
import { freePorts } from '../support/ports.js';
import { holdRequests, metricNow, statusCounts } from './held.js';
import { BENCH_KEY, CLI, median, recordsOption, round2, SERVER_CORE, serverFlags, sleep, stop, waitFor, writeBenchKeys, writeResult } from './harness.js';

// As the server does at its start: the history's dropped stores go back at the full collection before each load.
allowFullCollections();
const RECORDS = recordsOption(1_000_000);
const onlyArg = process.argv.indexOf('--only');
const ONLY = onlyArg > 0 ? process.argv[onlyArg + 1] : null;
const HELD_RECORDS = 200_000;
const HISTORY_SNAPSHOTS = 30;
const SHARE = 0.05;
const HELD = 10_000;
const SELECTIONS = 50;
const DISTINCT = 1000;
const now = Math.floor(Date.now() / 1000);

/** The six selections of the exactness table. */
const EXACT_QUERIES = [
  'get=json&time=100000',
  'get=json&type=socks5&time=100000',
  'get=json&type=socks5&country=us&anon=elite&time=100000',
  'get=json&ping=300&works=90&time=100000',
  'get=json&service=telegram&country=ru,ua&cm=except&time=100000',
  'get=json&type=http,https',
];

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-since-'));

/** The change of the exactness table: 3% checked again (ping, works, checked now), 1% gone, 1% new. */
function checkedAgain(records: readonly SnapshotRecord[], seed: number, at: number): SnapshotRecord[] {
  let x = seed;
  const rand = (): number => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 4294967296);
  const out: SnapshotRecord[] = [];
  for (const r of records) {
    const y = rand();
    if (y < 0.01) continue;
    out.push(y < 0.04 ? { ...r, checked_at: at - Math.floor(rand() * 30), ping_ms: Math.round((30 + rand() * 3000) * 100) / 100, works: Math.floor(rand() * 101) } : r);
  }
  return [...out, ...generateRecords({ records: Math.round(records.length * 0.01), seed: seed + 1, now: at })];
}

const plan = (q: string, store: Store): Plan => {
  const parsed = parsePlan(readQuery(q), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.plan;
};

/** A feed on `path` and the stores it swaps in, in order. */
async function feedOn(path: string): Promise<{ feed: SnapshotFeed; stores: Store[] }> {
  const feed = new SnapshotFeed(path, systemClock, createLogger('silent'));
  const stores: Store[] = [];
  feed.onSwap((s) => void stores.push(s));
  await feed.start();
  while (stores.length === 0) await sleep(5);
  return { feed, stores };
}

/** Renames `file` onto the feed's path and waits for its store. */
async function swapIn(file: string, path: string, stores: Store[]): Promise<Store> {
  const count = stores.length;
  renameSync(file, path);
  while (stores.length === count) await sleep(5);
  return stores[count];
}

/** Per row of `store`, its record's print as one string: two records are the same when these are. */
function printsByRow(store: Store): string[] {
  const prints: string[] = new Array(store.rows);
  const { byAddress, addrPrint } = store.c;
  for (let j = 0; j < byAddress.length; j++) prints[byAddress[j]] = `${addrPrint[j * 2]}.${addrPrint[j * 2 + 1]}`;
  return prints;
}

const keyOfRow = (store: Store, r: number): number => packKey(store.c.ip[r], store.c.port[r], store.c.type[r]);
const keyText = (key: number): string => {
  const ip = Math.floor(key / 262144);
  return `${TYPES[key % 4]}://${ip >>> 24}.${(ip >>> 16) & 255}.${(ip >>> 8) & 255}.${ip & 255}:${Math.floor(key / 4) % 65536}`;
};

/** The bytes of a JSON change set listing `rows` of `store` as upserts and `removes`. */
function changeSetBytes(store: Store, p: Plan, rows: Uint32Array, n: number, removes: string[], nowS: number, out: OutputBuffer): number {
  const writer = new BodyWriter(store, p, rows, n, nowS * 1000, { cursor: cursorOf(store, p, nowS), reset: false, removes });
  out.reset();
  writer.write(out, 0, n);
  return out.pos;
}

async function exactness(): Promise<Record<string, unknown>> {
  const at = now - 60;
  const first = generateRecords({ records: RECORDS, seed: 11, now: at - 60 });
  const path = join(work, 'exact.msgpack');
  writeFileSync(path, encodeSnapshot(first, at - 60));
  const next = join(work, 'exact-next.msgpack');
  writeFileSync(next, encodeSnapshot(checkedAgain(first, 12, at), at));
  const { feed, stores } = await feedOn(path);
  const before = stores[0];
  const nowS = now;
  const cursors = EXACT_QUERIES.map((q) => cursorOf(before, plan(q, before), nowS));
  // The lists of the cursor's moment, by key with their prints.
  const scratch = new QueryScratch();
  const beforePrints = printsByRow(before);
  const then = EXACT_QUERIES.map((q) => {
    const p = plan(q, before);
    const n = execute(before, p, before.prefixEnd(nowS - p.time), scratch);
    const listed = new Map<number, string>();
    for (let i = 0; i < n; i++) listed.set(keyOfRow(before, scratch.rows[i]), beforePrints[scratch.rows[i]]);
    return listed;
  });
  const store = await swapIn(next, path, stores);
  const prints = printsByRow(store);
  const out = new OutputBuffer();
  // The true difference of each selection, from the two full lists alone.
  const truths = EXACT_QUERIES.map((q, k) => {
    const p = plan(q, store);
    const n = execute(store, p, store.prefixEnd(nowS - p.time), scratch);
    const fullBytes = (() => {
      const w = new BodyWriter(store, p, scratch.rows, n, nowS * 1000);
      return w.frameLength() + w.rowsLength(0, n);
    })();
    const listedNow = new Set<number>();
    const upserts = new Uint32Array(n);
    let u = 0;
    for (let i = 0; i < n; i++) {
      const r = scratch.rows[i];
      const key = keyOfRow(store, r);
      listedNow.add(key);
      if (then[k].get(key) !== prints[r]) upserts[u++] = r;
    }
    const removes = [...then[k].keys()].filter((key) => !listedNow.has(key)).map(keyText).sort();
    return { records: n, upserts: u, removes: removes.length, bytes: changeSetBytes(store, p, upserts, u, removes, nowS, out), fullBytes };
  });
  // What the truth needed is dropped before the timing: its collection would fall in it.
  then.length = 0;
  fullCollection();
  const rows = EXACT_QUERIES.map((q, k) => {
    const truth = truths[k];
    const since = plan(`${q}&since=${cursors[k]}`, store);
    const times: number[] = [];
    let c = computeChanges(store, since, nowS, scratch);
    for (let run = 0; run < 7; run++) {
      const t0 = performance.now();
      c = computeChanges(store, since, nowS, scratch);
      times.push(performance.now() - t0);
    }
    const bytes = changeSetBytes(store, since, scratch.rows, c.n, c.removes, nowS, out);
    return {
      query: q,
      records: truth.records,
      true_upserts: truth.upserts,
      true_removes: truth.removes,
      upserts: c.n,
      removes: c.removes.length,
      reset: c.reset,
      entries_over_true: round2((c.n + c.removes.length) / Math.max(1, truth.upserts + truth.removes)),
      bytes_over_true: round2(bytes / truth.bytes),
      share_of_full_list: round2((bytes / truth.fullBytes) * 1000) / 1000,
      compute_ms_median: round2(median(times)),
      compute_ms_max: round2(Math.max(...times)),
    };
  });
  await feed.close();
  return { records: store.rows, selections: rows };
}

async function history(): Promise<Record<string, unknown>> {
  let records: SnapshotRecord[] = generateRecords({ records: RECORDS, seed: 31, now: now - HISTORY_SNAPSHOTS * 30 });
  const path = join(work, 'history.msgpack');
  writeFileSync(path, encodeSnapshot(records, now - HISTORY_SNAPSHOTS * 30));
  const { feed, stores } = await feedOn(path);
  const loads: number[] = [];
  const next = join(work, 'history-next.msgpack');
  for (let v = 1; v <= HISTORY_SNAPSHOTS; v++) {
    const at = now - (HISTORY_SNAPSHOTS - v) * 30;
    records = evolveRecords(records, { seed: 31 + v * 7, share: SHARE, now: at });
    writeFileSync(next, encodeSnapshot(records, at));
    await swapIn(next, path, stores);
    loads.push(feed.lastLoadMs);
    // Only the newest store is needed: the others go as they would in the server.
    stores.splice(0, stores.length - 1);
  }
  const last = stores.at(-1)!;
  const h = last.history;
  await feed.close();
  return {
    records: last.rows,
    snapshots: HISTORY_SNAPSHOTS,
    history_mb: round2(h.bytes / 1048576),
    history_bytes_per_record: round2(h.bytes / last.rows),
    versions_kept: h.versionCount,
    version_batches: h.versions.length,
    // The records' prints live in the store's columns and serve the history alone.
    prints_mb: round2(last.c.addrPrint.byteLength / 1048576),
    load_ms_median: Math.round(median(loads)),
    load_ms_each: loads.map(Math.round),
  };
}

/** A server on core 0 serving `snapshot`, and the load times its log reports. */
async function startServer(snapshot: string): Promise<{ port: number; pid: number; loads: number[]; stop(): Promise<void> }> {
  const keys = join(work, 'keys.json');
  writeBenchKeys(keys);
  const [port] = await freePorts(1);
  const server = spawn('taskset', ['-c', SERVER_CORE, process.execPath, ...serverFlags(), CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const loads: number[] = [];
  createInterface({ input: server.stdout! }).on('line', (line) => {
    const entry = JSON.parse(line) as { event?: string; ms?: number };
    if (entry.event === 'snapshot_loaded') loads.push(entry.ms!);
  });
  await waitFor(`http://127.0.0.1:${port}/health`, 60_000, (s) => s === 200);
  // taskset execs node: the pid is the server's.
  return { port, pid: server.pid!, loads, stop: () => stop(server) };
}

/** Holds `since` + `wait=60` requests, the i-th on `queries[i % length]`, each with the cursor of its query's full answer now. */
async function holdOn(port: number, queries: string[], held: number): Promise<Awaited<ReturnType<typeof holdRequests>>> {
  const paths: string[] = [];
  for (const q of queries) {
    const res = await fetch(`http://127.0.0.1:${port}/api?key=${BENCH_KEY}&${q}`);
    await res.arrayBuffer();
    paths.push(`/api?key=${BENCH_KEY}&${q}&wait=60&since=${res.headers.get('list-cursor')}`);
  }
  const holders = await holdRequests(port, held, (i) => `GET ${paths[i % paths.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  const deadline = Date.now() + 60_000;
  while ((await metricNow(port, 'proxylist_requests_held')) < held && Date.now() < deadline) await sleep(200);
  return holders;
}

async function heldOnFifty(): Promise<Record<string, unknown>> {
  let records: SnapshotRecord[] = generateRecords({ records: HELD_RECORDS, seed: 21, now: now - 60 });
  const snapshot = join(work, 'held.msgpack');
  writeFileSync(snapshot, encodeSnapshot(records, now - 60));
  records = evolveRecords(records, { seed: 28, share: SHARE, now });
  const next = join(work, 'held-next.msgpack');
  writeFileSync(next, encodeSnapshot(records, now));
  const server = await startServer(snapshot);
  try {
    const types = ['http', 'https', 'socks4', 'socks5', 'http,https'];
    const countries = ['US', 'DE', 'RU', 'BR', 'CN', 'IN', 'FR', 'NL', 'GB', 'JP'];
    const queries = Array.from({ length: SELECTIONS }, (_, i) => `get=${i % 2 ? 'txt' : 'json'}&type=${types[i % 5]}&country=${countries[Math.floor(i / 5)]}&time=86400`);
    const holders = await holdOn(server.port, queries, HELD);
    const held = await metricNow(server.port, 'proxylist_requests_held');
    const before = await metricNow(server.port, 'proxylist_change_sets_total');
    const renamedAt = performance.now();
    renameSync(next, snapshot);
    while ((holders.some((h) => h.answeredAt === 0) || server.loads.length < 2) && performance.now() - renamedAt < 30_000) await sleep(20);
    await sleep(500);
    // The load's own time, from the change seen to the swap (the watcher's short debounce before it is left in).
    const swappedAt = renamedAt + server.loads[1];
    const answered = holders.map((h) => (h.answeredAt === 0 ? Infinity : h.answeredAt - swappedAt));
    const statuses = statusCounts(holders);
    for (const h of holders) h.socket.destroy();
    return {
      records: HELD_RECORDS,
      held_requests: held,
      selections: SELECTIONS,
      load_ms: Math.round(server.loads[1]),
      all_answered_within_ms_of_swap: Math.round(Math.max(...answered)),
      median_answered_ms: Math.round(median(answered)),
      bytes_sent_mb: Math.round(holders.reduce((n, h) => n + h.bytes, 0) / 1048576),
      change_sets_worked_out: (await metricNow(server.port, 'proxylist_change_sets_total')) - before,
      statuses_after_swap: statuses,
    };
  } finally {
    await server.stop();
  }
}

/** The memory bound of docs/operations.md with the defaults, in MB, for `records` (docs/operations.md, Memory, hostile clients and secrets). */
const readmeBoundMb = (records: number): number => 108 + 0.22 * (records / 1000) + (10 + 0.22 * (records / 1000)) + 1.2 * (128 + 512) + 40 + 36;

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function heldOnDistinct(): Promise<Record<string, unknown>> {
  const records = generateRecords({ records: HELD_RECORDS, seed: 41, now: now - 60 });
  const snapshot = join(work, 'distinct.msgpack');
  writeFileSync(snapshot, encodeSnapshot(records, now - 60));
  // A checker that checks every proxy again: every record's checked_at moves.
  const next = join(work, 'distinct-next.msgpack');
  writeFileSync(next, encodeSnapshot(records.map((r) => ({ ...r, checked_at: r.checked_at + 30 })), now));
  const server = await startServer(snapshot);
  try {
    const queries = Array.from({ length: DISTINCT }, (_, i) => `works=95&ping=${i + 1}&time=86400`);
    const holders = await holdOn(server.port, queries, DISTINCT);
    const held = await metricNow(server.port, 'proxylist_requests_held');
    // The event-loop delay series restarts at each scrape: the next one covers the swap alone.
    await metricNow(server.port, 'proxylist_nodejs_eventloop_lag_max_seconds');
    const rssBefore = rssMb(server.pid);
    let rssPeak = rssBefore;
    let slowestHealth = 0;
    let healthChecks = 0;
    const renamedAt = performance.now();
    renameSync(next, snapshot);
    const deadline = renamedAt + 60_000;
    while ((holders.some((h) => h.answeredAt === 0) || server.loads.length < 2) && performance.now() < deadline) {
      const t0 = performance.now();
      await (await fetch(`http://127.0.0.1:${server.port}/health`)).arrayBuffer();
      slowestHealth = Math.max(slowestHealth, performance.now() - t0);
      healthChecks++;
      rssPeak = Math.max(rssPeak, rssMb(server.pid));
      await sleep(25);
    }
    const swappedAt = renamedAt + (server.loads[1] ?? NaN);
    // A selection whose list did not change (no proxy that fast and that reliable) is answered its empty change set when its wait runs out.
    const changed = holders.filter((h) => h.contentLength !== 0);
    const answered = changed.map((h) => (h.answeredAt === 0 ? Infinity : h.answeredAt - swappedAt));
    const lagMax = await metricNow(server.port, 'proxylist_nodejs_eventloop_lag_max_seconds');
    const statuses = statusCounts(holders);
    for (const h of holders) h.socket.destroy();
    return {
      records: HELD_RECORDS,
      held_requests: held,
      load_ms: Math.round(server.loads[1]),
      held_with_changes: changed.length,
      held_unchanged_answered_at_their_wait: holders.length - changed.length,
      slowest_health_ms: Math.round(slowestHealth),
      health_checks: healthChecks,
      all_answered_within_ms_of_swap: Math.round(Math.max(...answered)),
      median_answered_ms: Math.round(median(answered)),
      rss_before_mb: Math.round(rssBefore),
      rss_peak_mb: Math.round(rssPeak),
      readme_bound_mb: Math.round(readmeBoundMb(HELD_RECORDS)),
      worst_event_loop_delay_ms: round2(lagMax * 1000),
      held_passes: await metricNow(server.port, 'proxylist_held_passes_total'),
      held_pass_slices: await metricNow(server.port, 'proxylist_held_pass_slices_total'),
      statuses_after_swap: statuses,
    };
  } finally {
    await server.stop();
  }
}

try {
  const result: Record<string, unknown> = { date: new Date().toISOString() };
  if (!ONLY || ONLY === 'exact') result.exactness = await exactness();
  if (!ONLY || ONLY === 'history') result.history = await history();
  if (!ONLY || ONLY === 'held') result.held_on_50_selections = await heldOnFifty();
  if (!ONLY || ONLY === 'distinct') result.held_on_1000_distinct_selections = await heldOnDistinct();
  writeResult(ONLY ? `since-${ONLY}` : 'since', result);
} finally {
  rmSync(work, { recursive: true, force: true });
}
