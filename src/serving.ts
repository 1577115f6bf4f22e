import type { AddressSet } from './access/address.js';
import type { KeysInForce } from './access/keys-feed.js';
import type { Limiter } from './access/limiter.js';
import type { Clock } from './core/clock.js';
import { CodedError, messageOf } from './core/errors.js';
import type { Logger } from './core/log.js';
import { createAppMaker, type ProcessReports } from './http/app.js';
import type { TlsPair } from './http/tls-pair.js';
import type { App, Engine } from './http/engine.js';
import type { Lifecycle } from './http/lifecycle.js';
import { Metrics } from './http/metrics.js';
import { BodySources } from './bodies/sources.js';
import { ResponseCache } from './bodies/response-cache.js';
import { Sender } from './http/sender.js';
import { Waiters } from './http/waiters.js';
import type { HeldBudget } from './http/held-budget.js';
import { Answers } from './http/answer.js';
import { Repeats, type Repeat } from './http/repeats.js';
import { Listener } from './http/listener.js';
import { Selector } from './query/selection.js';
import { Turns } from './http/turns.js';
import { Tagger } from './query/etag.js';
import { QueryMemo } from './query/query-memo.js';
import { QueryScratch } from './query/scratch.js';
import type { StoreFeed } from './snapshot/snapshot-feed.js';

/**
 * At the end of a drain, a connection with no request in progress is
 * closed once it has been this quiet: a request its client sent just
 * before the listener closed has arrived by then, and is answered.
 */
const QUIET_MS = 500;

/** What one serving thread answers from, and how. */
export interface ServingParts {
  /** The HTTP engine, the same in every thread. */
  engine: Engine;
  clock: Clock;
  log: Logger;
  feed: StoreFeed;
  keys: KeysInForce;
  limiter: Limiter;
  life: Lifecycle;
  host: string;
  trustProxy: AddressSet;
  metricsAllow: AddressSet;
  operatorHosts: ReadonlySet<string>;
  accessLog: boolean;
  heldSliceMs?: number;
  /** The places for requests held with `wait`, shared by every thread (--max-held). */
  held: HeldBudget;
  /** This thread's share of the response cache and of the memory of bodies in flight. */
  cacheBytes: number;
  bodiesBytes: number;
  /** The certificate pair in force, for HTTPS. */
  tls: TlsPair | null;
  /** This serving thread's number: 0 for the main one; and how many the process has. */
  thread: number;
  threads: number;
  /** Other apps listen on the port too: other serving threads, or a renewed certificate's. */
  sharedPort: boolean;

  /** What /health and /metrics say for the whole process, from this thread's metrics. */
  reports(metrics: Metrics): ProcessReports;
}

/** A serving thread's state: everything between a request and its answer. */
export interface Serving {
  cache: ResponseCache;
  bodies: BodySources;
  sender: Sender;
  selector: Selector;
  turns: Turns;
  waiters: Waiters;
  metrics: Metrics;
  listener: Listener;
  /** Puts a renewed certificate pair in force for new connections: in place where the engine can, else with an app of its own that takes the port over. */
  renew(tls: TlsPair): Promise<void>;
  /** From now on every answer closes its connection and says so; held requests are answered now (as unchanged). */
  beginDrain(): void;
  /**
   * Stops taking connections, then waits (up to `limitMs`) for the bodies
   * in flight and, where the engine tells, for every connection: those
   * without a request in progress are closed once quiet for a moment.
   */
  drain(limitMs: number): Promise<void>;
  /** Closes what is left: pending bodies and every app. */
  close(): void;
}

/**
 * The serving half of the service, one per serving thread: the response
 * cache, bodies, selections, held requests, metrics and the app on the
 * port. What it answers from (the store, the keys, the limits) comes in
 * `parts`, the same for every thread of a process.
 */
export function startServing(p: ServingParts): Serving {
  const cache = new ResponseCache(p.cacheBytes);
  p.feed.onSwap(() => cache.clear());
  const sender = new Sender(p.log);
  const scratch = new QueryScratch();
  const bodies = new BodySources(cache, scratch, p.bodiesBytes, p.log, p.threads);
  const tagger = new Tagger(scratch);
  const queries = new QueryMemo<Repeat>();
  const selector = new Selector(tagger, scratch);
  const turns = new Turns();
  // Swapped-out snapshots' change sets go before the held requests are woken on the new one.
  p.feed.onSwap(() => selector.clear());
  const answers = new Answers(bodies, sender);
  const repeats = new Repeats(queries);
  // A repeated answer holds for its snapshot only.
  p.feed.onSwap(() => repeats.clear());
  const waiters = new Waiters(p.clock, p.feed, queries, selector, answers, sender, p.log, p.held, p.heldSliceMs);
  const metrics = new Metrics(p.feed, p.keys, cache, bodies, selector, turns, sender, waiters, repeats, p.life, p.clock, p.thread);
  const makeApp = createAppMaker({
    engine: p.engine, clock: p.clock, feed: p.feed, keys: p.keys, limiter: p.limiter, trustProxy: p.trustProxy, queries, selector, turns, answers, waiters, sender, log: p.log, metrics, repeats,
    metricsAllow: p.metricsAllow, operatorHosts: p.operatorHosts, life: p.life, accessLog: p.accessLog, reports: p.reports(metrics),
  });
  const appFor = (tls: TlsPair | null): App => {
    try {
      return makeApp(tls);
    } catch (err) {
      throw new CodedError('E_TLS', `the TLS certificate and key make no TLS context (${messageOf(err)})`);
    }
  };
  const app = appFor(p.tls);
  const listener = (p.life.listener = new Listener(app, p.host, p.log, p.sharedPort));
  return {
    cache, bodies, sender, selector, turns, waiters, metrics, listener,
    async renew(tls) {
      if (!app.renew) return listener.replace(appFor(tls));
      try {
        app.renew(tls);
      } catch (err) {
        throw new CodedError('E_TLS', `the TLS certificate and key make no TLS context (${messageOf(err)})`);
      }
    },
    beginDrain() {
      listener.drainApps();
      waiters.answerAll();
    },
    async drain(limitMs) {
      waiters.answerAll();
      listener.close();
      const deadline = Date.now() + limitMs;
      // Where the engine cannot tell its connections, each gets the quiet moment before the apps close.
      const quietAt = Date.now() + QUIET_MS;
      for (;;) {
        const open = listener.closeQuiet(QUIET_MS);
        const connectionsDone = open === null ? Date.now() >= quietAt : open === 0;
        if ((sender.pendingCount === 0 && bodies.inFlight === 0 && connectionsDone) || Date.now() >= deadline) break;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close() {
      sender.abandonAll();
      listener.closeApps();
    },
  };
}
