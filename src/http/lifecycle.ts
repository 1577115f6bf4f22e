import type { RedisLimiter } from '../access/redis-limiter.js';
import type { SnapshotOrigin } from '../snapshot/origin.js';
import type { Listener } from './listener.js';

/** What /health and /metrics tell of the instance beside the snapshot. */
export interface Lifecycle {
  /** Stopping: the balancer is to send requests elsewhere (README, Several instances). */
  draining: boolean;
  limiter: RedisLimiter | null;
  /** The http(s) origin the snapshot is downloaded from, if any. */
  origin: SnapshotOrigin | null;
  /** The listening socket, once listening. */
  listener: Listener | null;
}
