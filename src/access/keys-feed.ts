import { statSync } from 'node:fs';
import { messageOf } from '../core/errors.js';
import { FollowedFile, type FollowOptions } from '../core/follow-file.js';
import type { Logger } from '../core/log.js';
import { KeyTable } from './keys.js';
import { readKeysOffThread } from './keys-thread.js';

/**
 * The keys file, followed like the snapshot (a file downloaded from an
 * origin is followed where it is downloaded to). An invalid version is
 * rejected whole and the keys in force stay; an edit takes effect within the
 * poll interval at worst (1 s by default), without a restart. Each version is
 * read on a thread of its own: the requests of the keys in force are
 * answered meanwhile.
 */
/** The keys a thread checks requests against, and how their loads went. */
export interface KeysInForce {
  readonly table: KeyTable;
  readonly lastError: string | null;
  readonly source: string;
  readonly loadedAtMs: number | null;
}

export class KeysFeed extends FollowedFile implements KeysInForce {
  table: KeyTable = KeyTable.empty();
  lastError: string | null = null;
  /** When the keys in force were loaded (ms since the epoch); null before. */
  loadedAtMs: number | null = null;

  private readonly listeners: Array<(table: KeyTable) => void> = [];

  /** `source`: where the keys come from, as shown (the file, or the origin's URL). */
  constructor(path: string, readonly source: string, private readonly log: Logger, options?: FollowOptions) {
    super(path, options);
  }

  /** `listener` runs with each table put in force. */
  onLoad(listener: (table: KeyTable) => void): void {
    this.listeners.push(listener);
  }

  protected async load(path: string): Promise<void> {
    try {
      // The first read has no keys in force to answer with; a reload takes only cores that requests leave idle.
      const { data, idle, reads } = await readKeysOffThread(path, this.loadedAtMs !== null);
      this.table = new KeyTable(data);
      this.lastError = null;
      this.loadedAtMs = Date.now();
      for (const listener of this.listeners) listener(this.table);
      this.log.info({ event: 'keys_loaded', file: this.source, keys: this.table.size, idle_cores_only: idle, reads }, 'keys loaded');
      // Keys in plain text that any user of the host may read: the operator is told (`sha256` entries hold no secret).
      if (this.table.plainKeys > 0 && (statSync(path).mode & 0o004) !== 0) {
        this.log.warn({ event: 'keys_file_readable', file: this.source, plain_keys: this.table.plainKeys }, `the keys file holds ${this.table.plainKeys} keys in plain text and every user of the host may read it: chmod o-r it, or list the keys by sha256`);
      }
    } catch (err) {
      this.lastError = messageOf(err);
      this.log.error({ event: 'keys_rejected', file: this.source, reason: this.lastError, keys_in_force: this.table.size }, 'keys file rejected; the keys in force stay');
    }
  }

  protected missing(unreadable: string | null): void {
    this.lastError = unreadable === null ? 'keys file is missing' : `keys file cannot be read: ${unreadable}`;
    this.log.warn({ event: unreadable === null ? 'keys_missing' : 'keys_unreadable', file: this.source, reason: this.lastError, keys_in_force: this.table.size }, `${this.lastError}; the keys in force stay`);
  }
}
