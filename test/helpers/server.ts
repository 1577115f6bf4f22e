import { rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { suite, type Test } from 'uvu';
import type { Clock } from '../../src/core/clock.js';
import { ManualClock } from './manual-clock.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { createLogger } from '../../src/core/log.js';
import { startServer, type RunningServer, type ServeOptions } from '../../src/server.js';
import type { Engine, EngineChoice } from '../../src/http/engine.js';
import { engineChoice, selectEngine } from '../../src/http/engines.js';
import { eventually } from '../../support/eventually.js';
import { tempDir } from '../../support/temp.js';

export { eventually, tempDir };

/** The instant test snapshots are generated at: 2026-11-28 14:00:00 in UTC+02:00. */
export const TEST_NOW_S = 1795867200;

export const UNLIMITED = { per_window: null, daily: null, subnets: null };
export const TEST_KEY = 'test-key-unlimited';

export interface TestServer {
  server: RunningServer;
  dir: string;
  snapshot: string;
  keys: string;
  clock: ManualClock;
  base: string;
  get(path: string, init?: RequestInit): Promise<Response>;
  /** GET /api with the test key prepended to `query`. */
  api(query: string): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Starts the real server in this process on a free loopback port, with real
 * snapshot and keys files in a temporary folder and a frozen clock.
 */
export interface TestServerSetup {
  snapshot?: Uint8Array | null;
  keys?: unknown;
  clock?: Clock;
  options?: Partial<ServeOptions>;
}

/**
 * Serving threads of a test's server: PROXYLIST_THREADS as `npm test` runs
 * with it (CI runs the suite with the default and with 1), else the
 * default. A test of what happens inside one thread (one production for
 * its readers, its cache) says `threads: 1` in its options.
 */
export const testThreads = (): number | undefined => (process.env.PROXYLIST_THREADS ? Number(process.env.PROXYLIST_THREADS) : undefined);

/** The HTTP engine of a test's server: PROXYLIST_ENGINE as `npm test` runs with it (CI runs the suite on both), else the default. */
export const testEngineChoice = (): EngineChoice => engineChoice(process.env.PROXYLIST_ENGINE);
/** The engine that choice selects here, and its build. */
export const testEngine = (): Engine => selectEngine(testEngineChoice()).engine;
/** The serving threads of a server started as a command with the default: one per core, or one where the engine cannot share a port (docs/threads.md). */
export const defaultThreadsHere = (): number => (testEngine().sharesPorts ? Number(process.env.PROXYLIST_THREADS ?? availableParallelism()) : 1);

export async function startTestServer(o: TestServerSetup = {}): Promise<TestServer> {
  const dir = tempDir();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  if (o.snapshot) writeFileAtomic(snapshot, o.snapshot);
  writeFileSync(keys, JSON.stringify(o.keys ?? { keys: [{ key: TEST_KEY, name: 'test', limits: UNLIMITED }] }));
  const clock = (o.clock as ManualClock) ?? new ManualClock(TEST_NOW_S * 1000);
  const server = await startServer({
    snapshot, keys, port: 0, host: '127.0.0.1', clock, log: createLogger('silent'),
    follow: { debounceMs: 20, pollMs: 200 }, drainS: 0, threads: testThreads(), engine: testEngineChoice(), ...o.options,
  });
  await server.feed.settle();
  const base = `http://127.0.0.1:${server.port}`;
  return {
    server, dir, snapshot, keys, clock, base,
    get: (path, init) => fetch(base + path, init),
    api: (query) => fetch(`${base}/api?key=${TEST_KEY}${query ? '&' + query : ''}`),
    close: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A suite whose tests share one server, started before them from `setup()` and closed after them. */
export function serverSuite(title: string, setup: () => TestServerSetup = () => ({})): Test<{ t: TestServer }> {
  const s = suite<{ t: TestServer }>(title);
  s.before(async (ctx) => {
    ctx.t = await startTestServer(setup());
  });
  s.after((ctx) => ctx.t?.close());
  return s;
}

