import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressSet } from './access/address.js';
import { KeysFeed } from './access/keys-feed.js';
import { KEYS_FILE_MAX_BYTES } from './access/keys.js';
import { MemoryLimiter, type Limiter } from './access/limiter.js';
import { DEFAULT_LIMITER_TIMEOUT_MS, RedisLimiter } from './access/redis-limiter.js';
import { StateFile } from './access/state-file.js';
import { systemClock, type Clock } from './core/clock.js';
import { CodedError, messageOf } from './core/errors.js';
import type { FollowOptions } from './core/follow-file.js';
import { createLogger, type Logger } from './core/log.js';
import { allowFullCollections } from './core/full-collection.js';
import { createAppMaker, type TlsFiles } from './http/app.js';
import { TlsCertificates } from './http/tls.js';
import { readCertificatePair, type CertificatePair } from './core/certificate.js';
import { isLoopbackHost } from './access/address.js';
import type { Lifecycle } from './http/lifecycle.js';
import { Metrics } from './http/metrics.js';
import { BodySources, DEFAULT_WHOLE_BODIES_BYTES } from './bodies/sources.js';
import { ResponseCache } from './bodies/response-cache.js';
import { Sender } from './http/sender.js';
import { Waiters } from './http/waiters.js';
import { Answers } from './http/answer.js';
import { Listener } from './http/listener.js';
import { uwsBuild } from './http/uws.js';
import { Selector } from './query/selection.js';
import { Turns } from './http/turns.js';
import { Tagger } from './query/etag.js';
import { QueryMemo } from './query/query-memo.js';
import { QueryScratch } from './query/scratch.js';
import { DEFAULT_SNAPSHOT_MAX_MB, Origin } from './core/origin.js';
import { DEFAULT_HISTORY_EXACT_S, DEFAULT_HISTORY_S, SnapshotFeed } from './snapshot/snapshot-feed.js';

export interface ServeOptions {
  snapshot: string;
  keys: string;
  port: number;
  host: string;
  state?: string | null;
  trustProxy?: string[];
  /** Addresses and CIDR ranges that may read /metrics; loopback by default. */
  metricsAllow?: string[];
  /** Host names /metrics and /usage answer, besides addresses and localhost. */
  operatorHosts?: string[];
  logLevel?: string;
  /** A log line per response: method, path, status, bytes, µs, key name. */
  accessLog?: boolean;
  /** Response cache size; 0 turns the cache off. */
  cacheBytes?: number;
  /** Memory for large bodies kept whole while they are read (beyond the cache); past it, bodies go through a ring of chunks. */
  wholeBodiesBytes?: number;
  /** `memory` (the default), or a redis:// URL of the limiter shared by several instances. */
  limiter?: string;
  limiterTimeoutMs?: number;
  /** What to do while Redis is down: answer 503 to limited keys (`none`), or enforce the limits in memory. */
  limiterFallback?: 'deny' | 'memory';
  /** Seconds between conditional GETs of an http(s) snapshot. */
  snapshotPollS?: number;
  /** Seconds between conditional GETs of an http(s) keys file. */
  keysPollS?: number;
  /** The largest snapshot downloaded from an http(s) origin. */
  snapshotMaxBytes?: number;
  /** Options given on the command line with credentials or tokens in them (to be warned of). */
  secretFlags?: string[];
  /** Seconds of snapshots remembered for change sets. */
  historyS?: number;
  /** Seconds of snapshots whose change sets are exact for any selection. */
  historyExactS?: number;
  /** Seconds requests are still served after SIGTERM, while /health says draining. */
  drainS?: number;
  /** A certificate (chain) and its key in PEM: the port speaks HTTPS only (docs/operations.md, HTTPS). */
  tlsCert?: string;
  tlsKey?: string;
  /** Milliseconds a pass over held requests works per turn of the event loop (tests set 0: one group a turn). */
  heldSliceMs?: number;
  clock?: Clock;
  log?: Logger;
  follow?: FollowOptions;
}

export const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;
export { DEFAULT_WHOLE_BODIES_BYTES };
export const DEFAULT_METRICS_ALLOW = ['127.0.0.0/8', '::1'];
const DRAIN_LIMIT_MS = 10_000;
export const DEFAULT_DRAIN_S = 5;
export const DEFAULT_SNAPSHOT_POLL_S = 2;
export const DEFAULT_KEYS_POLL_S = 2;
const isUrl = (s: string): boolean => /^https?:\/\//i.test(s);

export interface RunningServer {
  port: number;
  feed: SnapshotFeed;
  keys: KeysFeed;
  cache: ResponseCache;
  bodies: BodySources;
  selector: Selector;
  turns: Turns;
  waiters: Waiters;
  /** The in-memory limiter: the limiter, or the shared one's fallback. */
  limiter: MemoryLimiter;
  /** The shared limiter, with --limiter redis://. */
  redis: RedisLimiter | null;
  log: Logger;
  /**
   * Stops accepting, lets bodies in flight finish (10 s at most), then
   * closes; with `drain` (a balancer's SIGTERM), first serves on for
   * --drain-s seconds while /health says draining.
   */
  stop(drain?: boolean): Promise<void>;
  /** Writes the usage state now, if anything changed (for an exit that cannot wait for `stop`). */
  saveState(): void;
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  const clock = o.clock ?? systemClock;
  const log = o.log ?? createLogger(o.logLevel);
  // The build of uWebSockets.js; refuses at once to run on a slow fallback.
  const build = uwsBuild();
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
  const feed = new SnapshotFeed(snapshotPath, clock, log, o.historyS ?? DEFAULT_HISTORY_S, o.follow, o.historyExactS ?? DEFAULT_HISTORY_EXACT_S);
  const keys = new KeysFeed(keysPath, keysOrigin?.url ?? keysPath, log, o.follow);
  const cache = new ResponseCache(o.cacheBytes ?? DEFAULT_CACHE_BYTES);
  feed.onSwap(() => cache.clear());
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
  const sender = new Sender(log);
  const scratch = new QueryScratch();
  const bodies = new BodySources(cache, scratch, o.wholeBodiesBytes ?? DEFAULT_WHOLE_BODIES_BYTES, log);
  const tagger = new Tagger(scratch);
  const queries = new QueryMemo();
  const selector = new Selector(tagger, scratch);
  const turns = new Turns();
  // Swapped-out snapshots' change sets go before the held requests are woken on the new one.
  feed.onSwap(() => selector.clear());
  const answers = new Answers(bodies, sender);
  const waiters = new Waiters(clock, feed, queries, selector, answers, sender, log, o.heldSliceMs);
  const memory = new MemoryLimiter();
  const redisUrl = o.limiter && o.limiter !== 'memory' ? o.limiter : null;
  if (redisUrl && o.state) throw new CodedError('E_USAGE', '--state cannot be used with --limiter redis://...: Redis keeps the usage');
  const redis = redisUrl
    ? new RedisLimiter({ url: redisUrl, timeoutMs: o.limiterTimeoutMs ?? DEFAULT_LIMITER_TIMEOUT_MS, fallback: o.limiterFallback === 'memory' ? memory : null, clock, log })
    : null;
  const limiter: Limiter = redis ?? memory;
  const state = o.state ? new StateFile(o.state, memory, clock, log) : null;
  state?.load();
  // Usage of keys from an earlier day whose windows have passed is dropped hourly.
  const pruner = setInterval(() => memory.prune(clock.nowMs(), clock.monotonicMs(), keys.table.longestWindowS * 1000), 3600_000);
  pruner.unref();
  const life: Lifecycle = { draining: false, limiter: redis, origin, keysOrigin, listener: null, tls: null };
  // A renewed certificate gets an app of its own, which takes the port over (docs/operations.md, HTTPS).
  const tls = pair ? (life.tls = new TlsCertificates(pair, async (renewed: CertificatePair) => listener.replace(appFor(renewed)), clock, log, o.follow)) : null;
  const metrics = new Metrics(feed, keys, cache, bodies, selector, turns, sender, waiters, life, clock);
  const makeApp = createAppMaker({ clock, feed, keys, limiter, trustProxy, queries, selector, turns, answers, waiters, sender, log, metrics, metricsAllow, operatorHosts: new Set(o.operatorHosts ?? []), life, accessLog: o.accessLog ?? false });
  const appFor = (tls: TlsFiles | null) => {
    try {
      return makeApp(tls);
    } catch (err) {
      throw new CodedError('E_TLS', `TLS certificate ${tls?.certFile} and key ${tls?.keyFile} make no TLS context (${messageOf(err)})`);
    }
  };
  const listener = (life.listener = new Listener(appFor(pair), o.host, log, pair !== null));
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
  } catch (err) {
    await keys.close();
    listener.closeApps();
    if (originDir) rmSync(originDir, { recursive: true, force: true });
    throw err;
  }
  log.info({ event: 'uws_loaded', build: build.label, passed_over: build.passedOver }, `${build.label} loaded${build.passedOver.length ? ` (passed over: ${build.passedOver.join('; ')})` : ''}`);
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
    { event: 'listening', host: o.host, port, tls: pair !== null, snapshot: origin ? origin.url : feed.path, keys: keys.source, state: o.state ?? null, trust_proxy: o.trustProxy ?? [], cache_bytes: o.cacheBytes ?? DEFAULT_CACHE_BYTES, bodies_bytes: o.wholeBodiesBytes ?? DEFAULT_WHOLE_BODIES_BYTES },
    `listening on ${o.host}:${port}${pair ? ' over HTTPS' : ''}`,
  );

  let stopping: Promise<void> | null = null;
  const stop = (drain = true): Promise<void> =>
    (stopping ??= (async () => {
      // Draining (docs/several-instances.md): /health says so at once, and requests are served on for a while, so that a balancer moves away first.
      life.draining = true;
      waiters.answerAll();
      const drainMs = drain ? (o.drainS ?? DEFAULT_DRAIN_S) * 1000 : 0;
      if (drainMs > 0) {
        log.info({ event: 'draining', seconds: drainMs / 1000 }, 'draining: /health answers 503, requests are still served');
        await new Promise((r) => setTimeout(r, drainMs));
        waiters.answerAll();
      }
      listener.close();
      const deadline = Date.now() + DRAIN_LIMIT_MS;
      while ((sender.pendingCount > 0 || bodies.inFlight > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await firstLoad.catch(() => undefined);
      await Promise.all([feed.close(), keys.close(), origin?.close(), keysOrigin?.close(), tls?.close()]);
      if (originDir) rmSync(originDir, { recursive: true, force: true });
      clearInterval(pruner);
      sender.abandonAll();
      state?.close();
      await redis?.close();
      listener.closeApps();
      log.info({ event: 'stopped' }, 'stopped');
    })());
  return { port, feed, keys, cache, bodies, selector, turns, waiters, limiter: memory, redis, log, stop, saveState: () => state?.flush() };
}
