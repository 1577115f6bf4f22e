import type { RedisLimiter } from '../access/redis-limiter.js';

/** What /health and /metrics tell of the instance beside the snapshot. */
export interface Lifecycle {
  /** Stopping: the balancer is to send requests elsewhere (API.md 6.3). */
  draining: boolean;
  limiter: RedisLimiter | null;
}
