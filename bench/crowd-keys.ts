/**
 * A keys file of 1,000,000 keys with the default limits, in a running
 * server of each engine (docs/operations.md, Memory):
 *   - its load: the time until the server is ready, and RSS against a
 *     server with the bench's key alone;
 *   - a reload on the idle server, and one under load: p99 of small
 *     answers (the bench's key) for 10 s, and for at least 10 s during
 *     which the keys file is written again (another key added, so that it
 *     is read and put in force);
 *   - a crowd: every key asks once (each request the next key), and RSS
 *     grown per key seen, read from the server's /metrics.
 * Run: npm run bench -- crowd-keys [--engines uws,node] [--keys N] [--only reload|crowd]
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { BENCH_KEY, benchFiles, crowdKeyName, option, round2, serverMemory, sleep, startServer, startWrk, stop, waitFor, wrk, writeCrowdKeys, writeResult } from './harness.js';
import { SMALL_MIX } from './mix.js';

const KEYS = Number(option('keys') ?? 1_000_000);
const ENGINES = (option('engines') ?? 'uws,node').split(',');
const ONLY = (option('only') ?? 'reload,crowd').split(',');
const RECORDS = 100_000;
const small = SMALL_MIX.map((q) => `/api?key=${BENCH_KEY}&${q}`);

async function started(snapshot: string, keys: string, engine: string): Promise<{ server: ReturnType<typeof startServer>; port: number; readyMs: number }> {
  const [port] = await freePorts(1);
  const t0 = performance.now();
  const server = startServer(snapshot, keys, port, undefined, ['--engine', engine]);
  await waitFor(`http://127.0.0.1:${port}/health`, 300_000, (s) => s === 200);
  // Ready means the keys are in force: the crowd's first key is answered.
  await waitFor(`http://127.0.0.1:${port}/api?key=${crowdKeyName(0)}&count=1`, 300_000, (s) => s === 200);
  return { server, port, readyMs: Math.round(performance.now() - t0) };
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-bench-crowd-keys-'));
try {
  const { snapshot, keys: benchKeys } = benchFiles(work, 'crowd-keys', RECORDS);
  const crowdKeys = join(work, 'crowd-keys.json');
  writeCrowdKeys(crowdKeys, KEYS);
  const rows: Record<string, unknown>[] = [];
  for (const engine of ENGINES) {
    // One key: what the server takes without the crowd's file.
    const [onePort] = await freePorts(1);
    const one = startServer(snapshot, benchKeys, onePort, undefined, ['--engine', engine]);
    await waitFor(`http://127.0.0.1:${onePort}/health`, 300_000, (s) => s === 200);
    await sleep(2000);
    const oneKey = await serverMemory(onePort);
    await stop(one);

    const { server, port, readyMs } = await started(snapshot, crowdKeys, engine);
    try {
      await sleep(2000);
      const loaded = await serverMemory(port);
      const row: Record<string, unknown> = { engine, keys: KEYS, ready_ms: readyMs, rss_mb_one_key: oneKey.rss_mb, rss_mb_loaded: loaded.rss_mb, bytes_per_key_loaded: Math.round(((loaded.rss_mb - oneKey.rss_mb) * 1e6) / KEYS) };
      if (ONLY.includes('reload')) Object.assign(row, await reloadUnderLoad(port, engine, crowdKeys));
      if (ONLY.includes('crowd')) Object.assign(row, await crowd(port));
      console.error(JSON.stringify(row));
      rows.push(row);
    } finally {
      await stop(server);
    }
  }
  writeResult('crowd-keys', { date: new Date().toISOString(), node: process.versions.node, records: RECORDS, rows });
} finally {
  rmSync(work, { recursive: true, force: true });
}

/**
 * A reload on the idle server, then p99 of small answers for 10 s before,
 * and for at least 10 s during which the keys file is written again.
 */
async function reloadUnderLoad(port: number, engine: string, crowdKeys: string): Promise<Record<string, unknown>> {
  const idleNext = nextKeysFile(crowdKeys, `idle-more-${engine}`);
  const idleReloadMs = await reload(port, idleNext, crowdKeys, `idle-more-${engine}`);
  wrk(port, small, 2, work); // warm-up
  const before = wrk(port, small, 10, work);
  // Written and on disk before the window: writing 100 MB is the operator's tool's work, and on the load core it would delay wrk itself.
  const next = nextKeysFile(crowdKeys, `one-more-${engine}`);
  const load = startWrk(port, small, work);
  await sleep(2000);
  const reloadMs = await reload(port, next, crowdKeys, `one-more-${engine}`);
  await sleep(Math.max(0, 8000 - reloadMs));
  const during = await load.finish();
  return { reload_ms_idle: idleReloadMs, rps_before: before.rps, rps_during: during.rps, p99_ms_before: before.p99_ms, p99_ms_during_reload: during.p99_ms, p99_ratio: round2(during.p99_ms / before.p99_ms), reload_ms: reloadMs };
}

/** The keys file with one key more, written and synced beside it. */
function nextKeysFile(crowdKeys: string, added: string): string {
  const doc = JSON.parse(readFileSync(crowdKeys, 'utf8')) as { keys: unknown[] };
  doc.keys.push({ key: added });
  const next = join(work, 'next-keys.json');
  writeFileSync(next, JSON.stringify(doc), { mode: 0o600 });
  const fd = openSync(next, 'r+');
  fsyncSync(fd);
  closeSync(fd);
  return next;
}

/** Puts `next` in place of the keys file (an atomic replace, as an operator's tool makes it): ms until the added key is answered. */
async function reload(port: number, next: string, crowdKeys: string, added: string): Promise<number> {
  const t0 = performance.now();
  renameSync(next, crowdKeys);
  await waitFor(`http://127.0.0.1:${port}/api?key=${added}&count=1`, 180_000, (s) => s === 200);
  return Math.round(performance.now() - t0);
}

/** Each key once, every request the next key: RSS grown per key seen. */
async function crowd(port: number): Promise<Record<string, unknown>> {
  const crowdBefore = await serverMemory(port);
  let asked = 0;
  while (asked < KEYS) {
    const r = wrk(port, SMALL_MIX.map((q) => `/api?key=KEYHERE&${q}`), 10, work, { crowdKeys: KEYS, crowdFrom: asked });
    asked += r.requests;
  }
  await sleep(2000);
  const crowdAfter = await serverMemory(port);
  return { crowd_requests: asked, rss_mb_before_crowd: crowdBefore.rss_mb, rss_mb_after_crowd: crowdAfter.rss_mb, rss_bytes_per_key_seen: Math.round(((crowdAfter.rss_mb - crowdBefore.rss_mb) * 1e6) / KEYS) };
}
