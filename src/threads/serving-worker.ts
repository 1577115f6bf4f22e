/**
 * A serving thread's entry (docs/threads.md): an app on the port the main
 * thread listens on, answering from the stores and keys the main thread
 * hands over, with the limits in the memory every thread shares (or in
 * Redis, on a connection of its own). /health and /metrics speak for the
 * process: they are the main thread's to make.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AddressSet } from '../access/address.js';
import { KeyTable } from '../access/keys.js';
import type { KeysInForce } from '../access/keys-feed.js';
import { MemoryLimiter, type Limiter } from '../access/limiter.js';
import { DEFAULT_LIMITER_TIMEOUT_MS, RedisLimiter } from '../access/redis-limiter.js';
import { SharedClock, systemClock } from '../core/clock.js';
import { messageOf } from '../core/errors.js';
import { allowFullCollections } from '../core/full-collection.js';
import { createLogger } from '../core/log.js';
import { selectEngine } from '../http/engines.js';
import { DEFAULT_MAX_HELD, HeldBudget } from '../http/held-budget.js';
import type { Lifecycle } from '../http/lifecycle.js';
import type { TlsPair } from '../http/tls-pair.js';
import { DEFAULT_CACHE_BYTES, DEFAULT_METRICS_ALLOW, DEFAULT_WHOLE_BODIES_BYTES } from '../options.js';
import { startServing } from '../serving.js';
import { releaseDroppedStores } from '../snapshot/release-dropped.js';
import { History } from '../store/history.js';
import { Store } from '../store/store.js';
import type { FromServing, ServingData, StoreMessage, ToServing } from './messages.js';
import { GatedStores } from './store-gate.js';

const data = workerData as ServingData;
const o = data.options;
const port = parentPort!;
const say = (m: FromServing): void => port.postMessage(m);

/** A store handed over by the main thread, as this thread reads it: the same shared columns and history. */
function storeOf(m: StoreMessage): Store {
  const { changedAt, snapshots, versions } = m.history;
  return new Store(m.columns, m.meta, m.source, new History(changedAt, snapshots, versions));
}

class HandedKeys implements KeysInForce {
  table: KeyTable;
  readonly lastError = null;
  readonly source = o.keys;
  loadedAtMs: number | null = Date.now();

  constructor(data: ServingData['keys']) {
    this.table = new KeyTable(data);
  }
}

allowFullCollections();
const clock = data.clock ? new SharedClock(data.clock) : systemClock;
// Every line a serving thread logs says which one.
const log = createLogger(o.logLevel).child({ thread: data.index });
const feed = new GatedStores(data.gate);
const keys = new HandedKeys(data.keys);
const memory = new MemoryLimiter(data.usage);
const redisUrl = o.limiter && o.limiter !== 'memory' ? o.limiter : null;
const redis = redisUrl
  ? new RedisLimiter({ url: redisUrl, timeoutMs: o.limiterTimeoutMs ?? DEFAULT_LIMITER_TIMEOUT_MS, fallback: o.limiterFallback === 'memory' ? memory : null, clock, log })
  : null;
const limiter: Limiter = redis ?? memory;
const { engine } = selectEngine(o.engine ?? 'auto', o.uwsSha256);
const life: Lifecycle = { engine: { name: engine.name, build: engine.build, native: engine.native }, draining: false, limiter: redis, origin: null, keysOrigin: null, listener: null, tls: null };

let nextAsk = 1;
const asked = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
function ask<T>(what: 'health' | 'metrics'): Promise<T> {
  return new Promise((resolve, reject) => {
    const id = nextAsk++;
    asked.set(id, { resolve: resolve as (value: unknown) => void, reject });
    say({ t: 'ask', id, what });
  });
}

const serving = startServing({
  engine,
  clock, log, feed, keys, limiter, life,
  host: o.host,
  trustProxy: new AddressSet(o.trustProxy ?? []),
  metricsAllow: new AddressSet(o.metricsAllow ?? DEFAULT_METRICS_ALLOW),
  operatorHosts: new Set(o.operatorHosts ?? []),
  accessLog: o.accessLog ?? false,
  heldSliceMs: o.heldSliceMs,
  held: new HeldBudget(o.maxHeld ?? DEFAULT_MAX_HELD, data.held),
  cacheBytes: Math.floor((o.cacheBytes ?? DEFAULT_CACHE_BYTES) / data.threads),
  bodiesBytes: Math.floor((o.wholeBodiesBytes ?? DEFAULT_WHOLE_BODIES_BYTES) / data.threads),
  tls: data.tls,
  sharedPort: true,
  thread: data.index,
  threads: data.threads,
  reports: () => ({ health: () => ask('health'), metrics: () => ask('metrics') }),
});

/**
 * An uncaught exception ends this thread, and the main thread ends the
 * process with one line saying why. The app is closed first: a thread that
 * ends with its app open makes Node abort the whole process with a dump.
 */
process.on('uncaughtException', (err) => {
  say({ t: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  serving.close();
  process.exit(1);
});

port.on('message', (m: ToServing) => {
  switch (m.t) {
    case 'store':
      feed.stage(storeOf(m.store));
      say({ t: 'staged' });
      break;
    case 'commit':
      void feed.commit().then(() => say({ t: 'swapped' }));
      break;
    case 'release':
      releaseDroppedStores();
      break;
    case 'keys':
      keys.table = new KeyTable(m.data);
      keys.loadedAtMs = Date.now();
      break;
    case 'tls':
      // Whatever fails here, this thread keeps the pair it had and says why: the main thread logs it once and /health shows it.
      void takePair(m.pair).then(
        () => say({ t: 'tls', id: m.id, error: null }),
        (err: unknown) => say({ t: 'tls', id: m.id, error: messageOf(err) }),
      );
      break;
    case 'accept':
      void serving.listener.follow(m.paused);
      break;
    case 'metrics':
      void serving.metrics.text().then((text) => say({ t: 'metrics', id: m.id, text }));
      break;
    case 'limiter':
      say({ t: 'limiter', id: m.id, up: redis?.up ?? true });
      break;
    case 'answer': {
      const a = asked.get(m.id);
      asked.delete(m.id);
      if (m.ok) a?.resolve(m.value);
      else a?.reject(new Error(String(m.value)));
      break;
    }
    case 'stop':
      void stop(m.drainMs, m.limitMs);
      break;
    case 'die':
      serving.close();
      process.exit(0);
  }
});

/** A renewed pair's app takes this thread's share of the port over; a throw of any step rejects. */
async function takePair(pair: TlsPair): Promise<void> {
  await serving.renew(pair);
}

/** As the main thread stops (server.ts): held requests answered, served on while draining, then closed once the bodies in flight are done. */
async function stop(drainMs: number, limitMs: number): Promise<void> {
  life.draining = true;
  serving.beginDrain();
  if (drainMs > 0) await new Promise((r) => setTimeout(r, drainMs));
  await serving.drain(limitMs);
  await redis?.close();
  serving.close();
  process.exit(0);
}

redis?.start();
await serving.listener.join(data.port);
say({ t: 'ready' });
