import { availableParallelism } from 'node:os';
import type { Clock } from './core/clock.js';
import type { FollowOptions } from './core/follow-file.js';
import type { Logger } from './core/log.js';
import type { EngineChoice } from './http/engine.js';
import type { AsnDbChoice } from './snapshot/exit-networks.js';
import { DEFAULT_WHOLE_BODIES_BYTES } from './bodies/sources.js';

/** How `proxylist serve` runs (docs/operations.md has each option). */
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
  /** Serving threads, each with an app on the port, all answering from one store (docs/threads.md); default: the cores the process may run on. */
  threads?: number;
  /** The HTTP engine: uWebSockets.js where a native build loads (`auto`), or one named (docs/operations.md, Where it runs). */
  engine?: EngineChoice;
  /** Only a uWebSockets.js `.node` file with one of these SHA-256 digests is loaded (hex); empty or absent: any. */
  uwsSha256?: string[];
  /** A snapshot with more than this share of its records skipped is rejected whole (default 0.5). */
  maxSkippedShare?: number;
  /** Where the exit network of a record the checker does not place is looked up: the default database, nowhere, or an operator's MaxMind DB file (docs/snapshot.md). */
  asnDb?: AsnDbChoice;
  /** The most requests with `wait` the process holds at once; past it, one is answered as if without `wait`. */
  maxHeld?: number;
  /** Milliseconds a pass over held requests works per turn of the event loop (tests set 0: one group a turn). */
  heldSliceMs?: number;
  clock?: Clock;
  log?: Logger;
  follow?: FollowOptions;
}

export const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;
export { DEFAULT_WHOLE_BODIES_BYTES };
export const DEFAULT_METRICS_ALLOW = ['127.0.0.0/8', '::1'];
export const DEFAULT_DRAIN_S = 5;
export const DEFAULT_SNAPSHOT_POLL_S = 2;
export const DEFAULT_KEYS_POLL_S = 2;
/** The most serving threads: past the cores of any machine it would run on. */
export const MAX_THREADS = 256;
/** One serving thread per core the process may run on (its CPU affinity, cgroup limits aside). */
export const defaultThreads = (): number => Math.min(MAX_THREADS, availableParallelism());
