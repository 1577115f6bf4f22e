import type { KeysData } from '../access/keys.js';
import type { TlsPair } from '../http/tls-pair.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import type { RememberedSnapshot } from '../store/history.js';
import type { StoreSource } from '../store/store.js';
import type { VersionBatch } from '../store/versions.js';
import type { ServeOptions } from '../options.js';

/**
 * What the main thread and the serving threads say to each other
 * (docs/threads.md). A store goes as its shared columns and history: the
 * message carries views of shared memory, never a copy of the rows.
 */
export interface StoreMessage {
  columns: StoreColumns;
  meta: StoreMeta;
  source: StoreSource;
  history: { changedAt: Uint32Array; snapshots: readonly RememberedSnapshot[]; versions: readonly VersionBatch[] };
}

export type ToServing =
  | { t: 'store'; store: StoreMessage }
  | { t: 'commit' }
  | { t: 'release' }
  | { t: 'keys'; data: KeysData }
  | { t: 'tls'; id: number; pair: TlsPair }
  | { t: 'accept'; paused: boolean }
  | { t: 'metrics'; id: number }
  | { t: 'limiter'; id: number }
  | { t: 'answer'; id: number; ok: boolean; value: unknown }
  | { t: 'stop'; drainMs: number; limitMs: number }
  | { t: 'die' };

export type FromServing =
  | { t: 'ready' }
  | { t: 'staged' }
  | { t: 'swapped' }
  | { t: 'ask'; id: number; what: 'health' | 'metrics' }
  | { t: 'metrics'; id: number; text: string }
  | { t: 'limiter'; id: number; up: boolean }
  /** A renewed certificate taken (`error` null), or why not: the thread keeps the pair it had. */
  | { t: 'tls'; id: number; error: string | null }
  | { t: 'failed'; message: string };

/** What a serving thread starts from. */
export interface ServingData {
  index: number;
  threads: number;
  port: number;
  options: Omit<ServeOptions, 'clock' | 'log' | 'follow'>;
  /** The time of a clock that only moves when told to (core/clock.ts); null: the system's. */
  clock: SharedArrayBuffer | null;
  /** The generation of the store every thread answers from (threads/store-gate.ts). */
  gate: SharedArrayBuffer;
  /** The memory limiter's table (access/shared-usage.ts). */
  usage: SharedArrayBuffer;
  /** The count of requests held with `wait` in the whole process (http/held-budget.ts). */
  held: SharedArrayBuffer;
  tls: TlsPair | null;
  keys: KeysData;
}
