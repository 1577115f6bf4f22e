import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import { Ajv } from 'ajv';
import { writeFileAtomic } from '../core/atomic-write.js';
import type { Clock } from '../core/clock.js';
import { CodedError, messageOf } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { DailyState, MemoryLimiter } from './limiter.js';

/** At most this long between a change of the counts and its write: a crash loses at most this much. */
export const SAVE_DELAY_MS = 5000;

const validateState = new Ajv({ strict: true }).compile<{ version: 1 } & DailyState>({
  type: 'object',
  required: ['version', 'day', 'keys'],
  properties: {
    version: { const: 1 },
    day: { type: 'integer' },
    keys: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['count', 'subnets'],
        properties: { count: { type: 'integer', minimum: 0 }, subnets: { type: 'array', items: { type: 'integer', minimum: 0 } } },
      },
    },
  },
});

/**
 * Keeps the daily counts and subnets seen in a file, so a restart or a crash
 * does not hand anyone a fresh daily quota. Written atomically (temp file,
 * fsync, rename) at most 5 s after a change, and on stop.
 */
export class StateFile {
  private readonly timer: NodeJS.Timeout;
  /** The limiter's count of changes at the last write (by any thread: the counts are the process's). */
  private saved: number;

  constructor(private readonly path: string, private readonly limiter: MemoryLimiter, private readonly clock: Clock, private readonly log: Logger) {
    // A folder that does not exist yet is made now; one that cannot be made is a start-up error, not a failure at every save.
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (err) {
      throw new CodedError('E_USAGE', `--state ${path}: cannot create its folder: ${messageOf(err)}`);
    }
    this.saved = limiter.changes;
    this.timer = setInterval(() => this.flush(), SAVE_DELAY_MS);
    this.timer.unref();
  }

  /** Loads today's counts, if the file holds them. A corrupt file is set aside; it never stops the start. */
  load(): void {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.error({ event: 'state_unreadable', file: this.path, reason: messageOf(err) }, 'state file unreadable; starting with empty usage');
      return;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      return this.setAside(`not valid JSON: ${messageOf(err)}`);
    }
    if (!validateState(doc)) return this.setAside(`wrong shape: ${validateState.errors?.[0]?.instancePath || 'top level'} ${validateState.errors?.[0]?.message}`);
    const taken = this.limiter.importDay(doc, this.clock.nowMs());
    // What was just read is what the file holds.
    this.saved = this.limiter.changes;
    this.log.info({ event: 'state_loaded', file: this.path, keys: Object.keys(doc.keys).length, current_day: taken }, taken ? 'usage state loaded' : 'usage state is from an earlier day; starting the day empty');
  }

  private setAside(reason: string): void {
    const aside = `${this.path}.corrupt-${Date.now()}`;
    try {
      renameSync(this.path, aside);
    } catch {
      // Could not move it: it is overwritten at the next save instead.
    }
    this.log.error({ event: 'state_corrupt', file: this.path, moved_to: aside, reason }, 'state file corrupt; set aside, starting with empty usage');
  }

  /** Writes now if anything changed since the last write; a failed write is logged and retried later. */
  flush(): void {
    const changes = this.limiter.changes;
    if (changes === this.saved) return;
    try {
      writeFileAtomic(this.path, JSON.stringify({ version: 1, ...this.limiter.exportDay(this.clock.nowMs()) }));
      this.saved = changes;
    } catch (err) {
      this.log.error({ event: 'state_save_failed', file: this.path, reason: messageOf(err) }, 'could not save usage state; will retry');
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
