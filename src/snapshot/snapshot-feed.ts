import type { Clock } from '../core/clock.js';
import { CodedError, messageOf } from '../core/errors.js';
import { FollowedFile, type FollowOptions } from '../core/follow-file.js';
import type { Logger } from '../core/log.js';
import { carryHistory } from '../store/history.js';
import { Store } from '../store/store.js';
import { BuildThread } from './build-thread.js';
import { DEFAULT_MAX_SKIPPED_SHARE, describeSkips } from './decode.js';
import { releaseDroppedStores } from './release-dropped.js';
import type { AsnDbChoice } from './exit-networks.js';

/** Seconds of snapshots remembered for change sets, at least. */
export const DEFAULT_HISTORY_S = 3600;
/** Seconds of snapshots whose change sets are exact for any selection (docs/design.md, Exact change sets). */
export const DEFAULT_HISTORY_EXACT_S = 900;

/** The store a thread answers from, and how its loads went: the feed itself, or a serving thread's copy of what it says (threads/serving-worker.ts). */
export interface StoreFeed {
  readonly current: Store | null;
  readonly reloadsOk: number;
  readonly reloadsFailed: number;
  readonly lastError: string | null;
  /** `listener` runs on each swap; a promise it returns is awaited before the swap is logged. */
  onSwap(listener: (store: Store) => void | Promise<void>): void;
}

/**
 * The snapshot the server answers from. Each new version of the file is built
 * in a worker and swapped in as one reference; a request reads `current` once
 * and finishes on that store, whatever is swapped in meanwhile. A version that
 * fails to load leaves the current store in place.
 */
export class SnapshotFeed extends FollowedFile implements StoreFeed {
  current: Store | null = null;
  reloadsOk = 0;
  reloadsFailed = 0;
  lastError: string | null = null;
  /** Duration of the last successful load: read, decode, check, build, transfer, swap. */
  lastLoadMs = 0;
  private generation = 0;
  /** A store was swapped out since the last full collection. */
  private dropped = false;
  private readonly releasers: Array<() => void> = [];
  private readonly listeners: Array<(store: Store) => void | Promise<void>> = [];
  private readonly builder: BuildThread;

  /**
   * `historyS`: how long the snapshots of change sets are remembered;
   * `historyExactS`: how long the versions that make them exact are kept
   * (docs/api.md, Keeping a list).
   */
  constructor(
    path: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly historyS = DEFAULT_HISTORY_S,
    options?: FollowOptions,
    private readonly historyExactS = DEFAULT_HISTORY_EXACT_S,
    /** A snapshot with more of its records skipped is rejected whole (--max-skipped-share). */
    maxSkippedShare = DEFAULT_MAX_SKIPPED_SHARE,
    /** Where exits the checker does not place are looked up (--asn-db). */
    asnDb: AsnDbChoice = 'default',
  ) {
    super(path, options);
    this.builder = new BuildThread(maxSkippedShare, asnDb);
  }

  override async close(): Promise<void> {
    await super.close();
    await this.builder.close();
  }

  onSwap(listener: (store: Store) => void | Promise<void>): void {
    this.listeners.push(listener);
  }

  /** `listener` runs where this thread lets go of the stores swapped out: at the start of the load after a swap. */
  onRelease(listener: () => void): void {
    this.releasers.push(listener);
  }

  protected async load(path: string, unchanged: () => boolean): Promise<void> {
    const started = performance.now();
    if (this.dropped) {
      this.dropped = false;
      releaseDroppedStores();
      for (const release of this.releasers) release();
    }
    let loaded: Awaited<ReturnType<BuildThread['load']>>;
    try {
      loaded = await this.builder.load(path);
    } catch (err) {
      if (!unchanged()) return this.changedWhileRead(path);
      this.reloadsFailed++;
      this.lastError = messageOf(err);
      if (err instanceof CodedError && err.code === 'E_BUILD_FAILED') this.log.error({ event: 'snapshot_build_failed', file: path, reason: this.lastError }, 'building the store failed; still serving the previous one');
      else this.log.error({ event: 'snapshot_rejected', file: path, reason: this.lastError }, 'snapshot rejected; still serving the previous one');
      return;
    }
    // Bytes read while the file was rewritten in place may mix two versions.
    if (!unchanged()) return this.changedWhileRead(path);
    const { columns, meta } = loaded;
    const loadedAtMs = this.clock.nowMs();
    // What each row's record was in the store before, merged a slice at a time: the store swapped in next is still this one.
    const history = await carryHistory(this.current, columns, meta, loadedAtMs, this.historyS * 1000, Math.min(this.historyS, this.historyExactS) * 1000);
    const store = new Store(columns, meta, { file: path, loadedAtMs, generation: ++this.generation }, history);
    this.dropped = this.current !== null;
    this.current = store;
    this.lastLoadMs = performance.now() - started;
    this.lastError = null;
    // Every serving thread has the new store before the swap is counted and logged (docs/threads.md).
    await Promise.all(this.listeners.map((listener) => listener(store)));
    this.reloadsOk++;
    this.log.info(
      { event: 'snapshot_loaded', file: path, records: store.rows, skipped: meta.skipped, duplicates: meta.duplicates, ms: Math.round(this.lastLoadMs) },
      'snapshot loaded',
    );
    if (meta.skipped > 0) {
      this.log.warn({ event: 'snapshot_records_skipped', skipped: meta.skipped, reasons: meta.skipCounts, first: meta.skipReasons }, `${meta.skipped} snapshot records skipped: ${describeSkips(meta.skipCounts)}`);
    }
  }

  /** The outcome of a read that a new version overtook is dropped, success or failure: the new version is read next. */
  private changedWhileRead(path: string): void {
    this.log.info({ event: 'snapshot_changed_while_read', file: path }, 'snapshot changed while being read; reading it again');
  }

  protected missing(unreadable: string | null): void {
    if (unreadable !== null) {
      this.lastError = `snapshot file cannot be read: ${unreadable}`;
      this.log.error({ event: 'snapshot_unreadable', file: this.path, reason: this.lastError }, this.current ? `${this.lastError}; still serving the last one loaded` : this.lastError);
      return;
    }
    this.lastError = 'snapshot file is missing';
    this.log.warn({ event: 'snapshot_missing', file: this.path }, this.current ? 'snapshot file is missing; still serving the last one loaded' : 'snapshot file does not exist yet; waiting for it');
  }
}
