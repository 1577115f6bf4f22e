import type { RedisLimiter } from '../access/redis-limiter.js';
import type { Origin } from '../core/origin.js';
import type { NativeBuild } from './engine.js';
import type { Listener } from './listener.js';
import type { TlsCertificates } from './tls.js';

/** What /health and /metrics tell of the instance beside the snapshot. */
export interface Lifecycle {
  /** The HTTP engine that serves, and its build (engine.ts). */
  engine: { name: string; build: string; native: NativeBuild | null };
  /** Stopping: the balancer is to send requests elsewhere (docs/several-instances.md). */
  draining: boolean;
  limiter: RedisLimiter | null;
  /** The http(s) origins the snapshot and the keys are downloaded from, if any. */
  origin: Origin | null;
  keysOrigin: Origin | null;
  /** The listening socket, once listening. */
  listener: Listener | null;
  /** The certificate in force, with --tls-cert. */
  tls: TlsCertificates | null;
}
