import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressSet, isLoopbackHost } from './access/address.js';
import { KeysFeed } from './access/keys-feed.js';
import { KEYS_FILE_MAX_BYTES } from './access/keys.js';
import { MemoryLimiter, type Limiter } from './access/limiter.js';
import { DEFAULT_LIMITER_TIMEOUT_MS, RedisLimiter } from './access/redis-limiter.js';
import { StateFile } from './access/state-file.js';
import { systemClock } from './core/clock.js';
import { CodedError, messageOf } from './core/errors.js';
import { createLogger, type Logger } from './core/log.js';
import { allowFullCollections } from './core/full-collection.js';
import { TlsCertificates } from './http/tls.js';
import { readCertificatePair, type CertificatePair } from './core/certificate.js';
import { healthReport } from './http/health.js';
import type { Lifecycle } from './http/lifecycle.js';
import type { BodySources } from './bodies/sources.js';
import type { ResponseCache } from './bodies/response-cache.js';
import type { Waiters } from './http/waiters.js';
import { selectEngine } from './http/engines.js';
import { DEFAULT_MAX_HELD, HeldBudget } from './http/held-budget.js';
import type { Selector } from './query/selection.js';
import type { Turns } from './http/turns.js';
import { DEFAULT_SNAPSHOT_MAX_MB, Origin } from './core/origin.js';
import { DEFAULT_CACHE_BYTES, DEFAULT_DRAIN_S, DEFAULT_KEYS_POLL_S, DEFAULT_METRICS_ALLOW, DEFAULT_SNAPSHOT_POLL_S, DEFAULT_WHOLE_BODIES_BYTES, defaultThreads, type ServeOptions } from './options.js';
import { startServing } from './serving.js';
import { DEFAULT_HISTORY_EXACT_S, DEFAULT_HISTORY_S, SnapshotFeed } from './snapshot/snapshot-feed.js';
import { sumExpositions } from './threads/metrics-sum.js';
import { ServingThreads } from './threads/serving-threads.js';
import { GatedStores, newStoreGate } from './threads/store-gate.js';

export type { ServeOptions } from './options.js';
export { DEFAULT_CACHE_BYTES, DEFAULT_DRAIN_S, DEFAULT_KEYS_POLL_S, DEFAULT_METRICS_ALLOW, DEFAULT_SNAPSHOT_POLL_S, DEFAULT_WHOLE_BODIES_BYTES } from './options.js';
const DRAIN_LIMIT_MS = 10_000;
const isUrl = (s: string): boolean => /^https?:\/\//i.test(s);

export interface RunningServer {
  port: number;
  feed: SnapshotFeed;
  keys: KeysFeed;
  /** The main thread's serving state (every thread has its own: docs/threads.md). */
  cache: ResponseCache;
  bodies: BodySources;
  selector: Selector;
  turns: Turns;
  waiters: Waiters;
  /** The in-memory limiter: the limiter, or the shared one's fallback; its counts are every thread's. */
  limiter: MemoryLimiter;
  /** The shared limiter, with --limiter redis://. */
  redis: RedisLimiter | null;
  /** Serving threads, the main one included. */
  threads: number;
  log: Logger;
  /**
   * Stops accepting, lets bodies in flight finish (10 s at most), then
   * closes; with `drain` (a balancer's SIGTERM), first serves on for
   * --drain-s seconds while /health says draining. Every thread alike.
   */
  stop(drain?: boolean): Promise<void>;
  /** Writes the usage state now, if anything changed (for an exit that cannot wait for `stop`). */
  saveState(): void;
  /** Ends the other serving threads at once (before a process exits without `stop`). */
  killThreads(): Promise<void>;
  /** Whether the Redis limiter is up in every serving thread (true without Redis). */
  limiterUp(): Promise<boolean>;
  /** Told once if a serving thread dies: the process must then end. */
  onThreadDeath(handler: (reason: string) => void): void;
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  const clock = o.clock ?? systemClock;
  const log = o.log ?? createLogger(o.logLevel);
  // The HTTP engine: uWebSockets.js where a native build loads; `--engine uws` where none does stops here.
  const { engine, passedOver, refused } = selectEngine(o.engine ?? 'auto', o.uwsSha256);
  // Threads share the port with SO_REUSEPORT, which the node engine has from Node 22.12 on: before, it serves from one.
  const threadsAsked = o.threads ?? defaultThreads();
  const threadCount = engine.sharesPorts ? threadsAsked : 1;
  // A dropped store's memory goes back at the next full collection (snapshot/release-dropped.ts).
  allowFullCollections();
  // A certificate that cannot serve stops the start, before anything is read or listens.
  const pair = o.tlsCert && o.tlsKey ? readCertificatePair(o.tlsCert, o.tlsKey) : null;
  // A snapshot or keys file at an http(s) origin is downloaded into a folder of its own and followed there like a local file.
  const originDir = isUrl(o.snapshot) || isUrl(o.keys) ? mkdtempSync(join(tmpdir(), 'proxylist-origin-')) : null;
  const snapshotPath = isUrl(o.snapshot) ? join(originDir!, 'snapshot.msgpack') : o.snapshot;
  const keysPath = isUrl(o.keys) ? join(originDir!, 'keys.json') : o.keys;
  const origin = isUrl(o.snapshot)
    ? new Origin(o.snapshot, snapshotPath, o.snapshotPollS ?? DEFAULT_SNAPSHOT_POLL_S, o.snapshotMaxBytes ?? DEFAULT_SNAPSHOT_MAX_MB * 1024 * 1024, { name: 'snapshot', maxBytesSaid: '--snapshot-max-mb' }, log)
    : null;
  const keysOrigin = isUrl(o.keys) ? new Origin(o.keys, keysPath, o.keysPollS ?? DEFAULT_KEYS_POLL_S, KEYS_FILE_MAX_BYTES, { name: 'keys', maxBytesSaid: 'MB' }, log) : null;
  const feed = new SnapshotFeed(snapshotPath, clock, log, o.historyS ?? DEFAULT_HISTORY_S, o.follow, o.historyExactS ?? DEFAULT_HISTORY_EXACT_S, o.maxSkippedShare, o.asnDb);
  const keys = new KeysFeed(keysPath, keysOrigin?.url ?? keysPath, log, o.follow);
  let trustProxy: AddressSet;
  try {
    trustProxy = new AddressSet(o.trustProxy ?? []);
  } catch (err) {
    throw new CodedError('E_USAGE', `--trust-proxy: ${messageOf(err)}`);
  }
  let metricsAllow: AddressSet;
  try {
    metricsAllow = new AddressSet(o.metricsAllow ?? DEFAULT_METRICS_ALLOW);
  } catch (err) {
    throw new CodedError('E_USAGE', `--metrics-allow: ${messageOf(err)}`);
  }
  const memory = new MemoryLimiter();
  const held = new HeldBudget(o.maxHeld ?? DEFAULT_MAX_HELD);
  const redisUrl = o.limiter && o.limiter !== 'memory' ? o.limiter : null;
  if (redisUrl && o.state) throw new CodedError('E_USAGE', '--state cannot be used with --limiter redis://...: Redis keeps the usage');
  const redis = redisUrl
    ? new RedisLimiter({ url: redisUrl, timeoutMs: o.limiterTimeoutMs ?? DEFAULT_LIMITER_TIMEOUT_MS, fallback: o.limiterFallback === 'memory' ? memory : null, clock, log })
    : null;
  const limiter: Limiter = redis ?? memory;
  if (redis === null || o.limiterFallback === 'memory') {
    // Room for every key of the file in the usage table, so that it never grows while the keys' first requests come.
    memory.reserve(keys.table.size);
    keys.onLoad((table) => memory.reserve(table.size));
  }
  const state = o.state ? new StateFile(o.state, memory, clock, log) : null;
  state?.load();
  // Usage of keys from an earlier day whose windows have passed is dropped hourly.
  const pruner = setInterval(() => memory.prune(clock.nowMs(), clock.monotonicMs(), keys.table.longestWindowS * 1000), 3600_000);
  pruner.unref();
  const life: Lifecycle = { engine: { name: engine.name, build: engine.build, native: engine.native }, draining: false, limiter: redis, origin, keysOrigin, listener: null, tls: null };
  // What every serving thread answers from: the newest store all of them have (threads/store-gate.ts).
  const gate = newStoreGate();
  const served = new GatedStores(gate, feed);
  // The other serving threads, each with an app on the port; this one answers their questions about the whole process.
  const others = new ServingThreads(
    {
      health: async () => healthReport(served, keys, life, threadCount, redis === null || (await others.limiterUp())),
      metrics: async () => sumExpositions(await serving.metrics.text(), await others.metrics()),
    },
    log,
  );
  // A renewed certificate gets an app of its own in every thread, which takes the port over (docs/operations.md, HTTPS).
  const tls = pair
    ? (life.tls = new TlsCertificates(pair, async (renewed: CertificatePair) => {
        // The checked bytes, to every thread: none reads the files again (docs/operations.md, HTTPS).
        await serving.renew(renewed);
        const failed = await others.tls(renewed);
        if (failed.length > 0) throw new CodedError('E_TLS', `the renewed certificate is in force on some threads only; ${failed.join('; ')}`);
      }, clock, log, o.follow))
    : null;
  const serving = startServing({
    engine, clock, log, feed: served, keys, limiter, life, host: o.host, trustProxy, metricsAllow,
    operatorHosts: new Set(o.operatorHosts ?? []),
    accessLog: o.accessLog ?? false,
    heldSliceMs: o.heldSliceMs,
    held,
    cacheBytes: Math.floor((o.cacheBytes ?? DEFAULT_CACHE_BYTES) / threadCount),
    bodiesBytes: Math.floor((o.wholeBodiesBytes ?? DEFAULT_WHOLE_BODIES_BYTES) / threadCount),
    tls: pair,
    sharedPort: pair !== null || threadCount > 1,
    thread: 0,
    threads: threadCount,
    reports: (metrics) => ({
      health: async () => healthReport(served, keys, life, threadCount, redis === null || (await others.limiterUp())),
      metrics: async () => (others.count === 0 ? metrics.text() : sumExpositions(await metrics.text(), await others.metrics())),
    }),
  });
  const { listener } = serving;
  listener.onPause = (paused) => others.accept(paused);
  // A new store is swapped in every thread at one moment: staged in each, then the gate opened to it (threads/store-gate.ts).
  feed.onSwap(async (store) => {
    served.stage(store);
    await others.stage(store);
    served.open(store.source.generation);
    await Promise.all([served.commit(), others.commit()]);
  });
  // A store goes back to the system only once no thread holds it: each lets go when the main thread does.
  feed.onRelease(() => others.release());
  keys.onLoad((table) => others.keys(table));
  let port: number;
  try {
    // Keys that cannot be read at start stop the server, as a bad config stops nginx: it would answer 401 to everyone. A later bad edit keeps the keys in force.
    if (keysOrigin) {
      await keysOrigin.pollNow();
      if (keysOrigin.lastError !== null) throw new CodedError('E_KEYS_INVALID', keysOrigin.lastError);
    }
    await keys.start();
    if (keys.lastError !== null) throw new CodedError('E_KEYS_INVALID', keys.lastError.replace(/^keys file /, `keys file ${keys.source} `));
    port = await listener.start(o.port);
    // A serving thread logs at the level of the main thread's logger (one given to the server included).
    const { clock: _c, log: _l, follow: _f, ...plain } = { ...o, logLevel: log.level, engine: engine.name };
    await others.start(threadCount - 1, { threads: threadCount, port, clock: clock.shared ?? null, options: plain, usage: memory.table.buffer, held: held.buffer, tls: pair && { cert: pair.cert, key: pair.key }, keys: keys.table.data, gate });
  } catch (err) {
    await others.kill();
    await keys.close();
    listener.closeApps();
    if (originDir) rmSync(originDir, { recursive: true, force: true });
    throw err;
  }
  const native = engine.native ? `, ${engine.native.package} ${engine.native.version}, SHA-256 ${engine.native.sha256}` : '';
  log.info({ event: 'engine_selected', engine: engine.name, build: engine.build, native: engine.native, passed_over: passedOver }, `the ${engine.name} engine serves, with ${engine.build}${native}${passedOver.length ? ` (passed over: ${passedOver.join('; ')})` : ''}`);
  if (refused.length > 0) log.warn({ event: 'uws_refused', engine: engine.name, refused }, `uWebSockets.js refused by --uws-sha256, the ${engine.name} engine serves: ${refused.join('; ')}`);
  for (const limit of engine.limits()) log.warn({ event: 'engine_limit', engine: engine.name, build: engine.build }, limit);
  if (!engine.timesOut) {
    log.warn({ event: 'engine_without_timeouts', engine: engine.name, build: engine.build }, `${engine.build} closes no connection that is idle or slow: idle keep-alive, silent and slowloris connections hold their descriptors until the client leaves; put deploy/haproxy.cfg in front, or choose --engine node (docs/operations.md, What each build answers)`);
  }
  if (threadCount < threadsAsked && o.threads !== undefined) {
    log.warn({ event: 'threads_unavailable', threads: threadsAsked, node: process.versions.node }, `the node engine serves from one thread on Node ${process.versions.node}: threads share a port from Node 22.12 on (docs/threads.md)`);
  }
  for (const flag of o.secretFlags ?? []) {
    log.warn({ event: 'secret_on_command_line', option: flag }, `--${flag} carries a password or token on the command line, where ps shows it to every user: set PROXYLIST_${flag.toUpperCase()} instead`);
  }
  if (pair && pair.notAfterMs <= clock.nowMs()) {
    log.warn({ event: 'tls_expired', subject: pair.subject, not_after: new Date(pair.notAfterMs).toISOString() }, `the TLS certificate ${pair.certFile} (${pair.subject}) expired at ${new Date(pair.notAfterMs).toISOString()}: clients refuse it until it is renewed`);
  }
  if (!pair && !isLoopbackHost(o.host)) {
    log.warn({ event: 'plain_http', host: o.host }, `plain HTTP on ${o.host}, which the network reaches: access keys travel in cleartext; give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a proxy that speaks HTTPS`);
  }
  await tls?.start();
  redis?.start();
  const firstLoad = feed.start();
  origin?.start();
  keysOrigin?.start();
  log.info(
    { event: 'listening', host: o.host, port, tls: pair !== null, threads: threadCount, snapshot: origin ? origin.url : feed.path, keys: keys.source, state: o.state ?? null, trust_proxy: o.trustProxy ?? [], cache_bytes: o.cacheBytes ?? DEFAULT_CACHE_BYTES, bodies_bytes: o.wholeBodiesBytes ?? DEFAULT_WHOLE_BODIES_BYTES },
    `listening on ${o.host}:${port}${pair ? ' over HTTPS' : ''}${threadCount > 1 ? ` with ${threadCount} threads` : ''}`,
  );

  let stopping: Promise<void> | null = null;
  const stop = (drain = true): Promise<void> =>
    (stopping ??= (async () => {
      // Draining (docs/several-instances.md): /health says so at once, and requests are served on for a while, so that a balancer moves away first.
      life.draining = true;
      const drainMs = drain ? (o.drainS ?? DEFAULT_DRAIN_S) * 1000 : 0;
      const othersStopped = others.stop(drainMs, DRAIN_LIMIT_MS);
      serving.beginDrain();
      if (drainMs > 0) {
        log.info({ event: 'draining', seconds: drainMs / 1000 }, 'draining: /health answers 503, requests are still served');
        await new Promise((r) => setTimeout(r, drainMs));
      }
      await serving.drain(DRAIN_LIMIT_MS);
      await othersStopped;
      await firstLoad.catch(() => undefined);
      await Promise.all([feed.close(), keys.close(), origin?.close(), keysOrigin?.close(), tls?.close()]);
      if (originDir) rmSync(originDir, { recursive: true, force: true });
      clearInterval(pruner);
      state?.close();
      await redis?.close();
      serving.close();
      log.info({ event: 'stopped' }, 'stopped');
    })());
  const { cache, bodies, selector, turns, waiters } = serving;
  return {
    port, feed, keys, cache, bodies, selector, turns, waiters, limiter: memory, redis, threads: threadCount, log, stop,
    saveState: () => state?.flush(),
    killThreads: () => others.kill(),
    limiterUp: async () => redis === null || (redis.up && (await others.limiterUp())),
    onThreadDeath: (handler) => (others.onDeath = handler),
  };
}
