import { readFileSync } from 'node:fs';
import { messageOf } from '../core/errors.js';
import { FollowedFile, type FollowOptions } from '../core/follow-file.js';
import type { Logger } from '../core/log.js';
import { KeyTable } from './keys.js';

/**
 * The keys file, followed like the snapshot. An invalid version is rejected
 * whole and the keys in force stay; an edit takes effect within the poll
 * interval at worst (1 s by default), without a restart.
 */
export class KeysFeed extends FollowedFile {
  table: KeyTable = KeyTable.empty();
  lastError: string | null = null;

  constructor(path: string, private readonly log: Logger, options?: FollowOptions) {
    super(path, options);
  }

  protected load(path: string): void {
    try {
      this.table = KeyTable.parse(readFileSync(path, 'utf8'));
      this.lastError = null;
      this.log.info({ event: 'keys_loaded', file: path, keys: this.table.entries.size }, 'keys loaded');
    } catch (err) {
      this.lastError = messageOf(err);
      this.log.error({ event: 'keys_rejected', file: path, reason: this.lastError, keys_in_force: this.table.entries.size }, 'keys file rejected; the keys in force stay');
    }
  }

  protected missing(): void {
    this.lastError = 'keys file is missing';
    this.log.warn({ event: 'keys_missing', file: this.path, keys_in_force: this.table.entries.size }, 'keys file is missing; the keys in force stay');
  }
}
