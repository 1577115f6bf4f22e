import { LRUCache } from 'lru-cache';
import type { Store } from '../store/store.js';
import { computeChanges, type ChangeSet } from './changes.js';
import { carriesCursor, cursorOf } from './cursor.js';
import type { Tagger } from './etag.js';
import { planKey, type Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/** A change set with its upserts, rows of its store in row order, in an array of its own. */
export interface Changes extends ChangeSet {
  rows: Uint32Array;
}

/**
 * What an answer to a plan is about, worked out once: the store, the rows
 * of its window (the first `end`), the ETag that names them, the cursor,
 * and for a plan with `since` its change set.
 */
export interface Selection {
  store: Store;
  plan: Plan;
  end: number;
  nowMs: number;
  etag: string;
  cursor: string | null;
  /** A change set that lists the whole list: the cursor is unknown, or the change set would be larger. */
  reset: boolean;
  changes: Changes | null;
}

/** The end of the plan's window in `store` at `nowMs`: rows are freshest first, so the window is a prefix. */
export const windowEnd = (store: Store, plan: Plan, nowMs: number): number => store.prefixEnd(Math.floor(nowMs / 1000) - plan.time);

/**
 * Rows a selection scans, from which it is worth a turn of its own (see
 * http/turns.ts): a pass over them takes about a millisecond.
 */
const HEAVY_ROWS = 65_536;

/**
 * Change sets remembered for the requests that ask for the same one in the
 * same second (clients woken together come back with the same cursor):
 * bytes of their rows and removes, and the largest one kept.
 */
const MEMO_BYTES = 8 * 1024 * 1024;
const MEMO_ENTRY_BYTES = 1024 * 1024;
/** What a remove's string costs, roughly, beside its characters. */
const REMOVE_BYTES = 64;

interface Remembered {
  generation: number;
  second: number;
  changes: Changes;
}

/**
 * The one way from a plan to its selection, for a request answered at once
 * and for one held until its answer changes. What depends only on the plan,
 * the snapshot and the second is remembered per plan: the cursor here, the
 * ETag by the tagger, the change set in a small memo. Snapshots are named
 * by generation, never by reference: plans outlive stores.
 */
export class Selector {
  /** Change sets worked out (docs/api.md, Keeping a list). */
  changeSets = 0;
  private readonly cursors = new WeakMap<Plan, { generation: number; second: number; cursor: string }>();
  private readonly memo = new LRUCache<string, Remembered>({
    maxSize: MEMO_BYTES,
    maxEntrySize: MEMO_ENTRY_BYTES,
    sizeCalculation: (r) => 64 + r.changes.rows.byteLength + r.changes.removes.length * REMOVE_BYTES,
  });

  constructor(readonly tagger: Tagger, private readonly scratch: QueryScratch) {}

  select(store: Store, plan: Plan, nowMs: number, end = windowEnd(store, plan, nowMs)): Selection {
    const nowS = Math.floor(nowMs / 1000);
    const cursor = plan.since !== null || carriesCursor(plan) ? this.cursor(store, plan, nowS) : null;
    const changes = plan.since !== null ? this.changes(store, plan, nowS) : null;
    return { store, plan, end, nowMs, etag: this.tagger.etag(store, plan, end, nowS), cursor, reset: changes?.reset ?? false, changes };
  }

  /**
   * Whether selecting `plan` on `store` now takes a pass over many rows:
   * nothing remembered serves it, and it scans HEAVY_ROWS rows or more (a
   * count stops the scan early).
   */
  heavy(store: Store, plan: Plan, nowMs: number, end: number): boolean {
    if (store.rows < HEAVY_ROWS) return false;
    const nowS = Math.floor(nowMs / 1000);
    if (plan.since !== null) {
      const r = this.memo.get(planKey(plan));
      return r === undefined || r.generation !== store.source.generation || r.second !== nowS;
    }
    if (this.tagger.knows(store, plan, end, nowS)) return false;
    const scanned = plan.sort === 'ping' || plan.sort === 'works' ? store.rows : end;
    return scanned >= HEAVY_ROWS && (plan.count === null || plan.count + (plan.offset ?? 0) >= HEAVY_ROWS);
  }

  /** Forgets what refers to swapped-out snapshots' rows. */
  clear(): void {
    this.memo.clear();
  }

  private cursor(store: Store, plan: Plan, nowS: number): string {
    const generation = store.source.generation;
    const r = this.cursors.get(plan);
    if (r !== undefined && r.generation === generation && r.second === nowS) return r.cursor;
    const cursor = cursorOf(store, plan, nowS);
    this.cursors.set(plan, { generation, second: nowS, cursor });
    return cursor;
  }

  /** The change set of `plan` (which has a cursor) at second `nowS`. */
  private changes(store: Store, plan: Plan, nowS: number): Changes {
    const generation = store.source.generation;
    const key = planKey(plan);
    const r = this.memo.get(key);
    if (r !== undefined && r.generation === generation && r.second === nowS) return r.changes;
    this.changeSets++;
    const set = computeChanges(store, plan, nowS, this.scratch);
    const changes = { ...set, rows: this.scratch.rows.slice(0, set.n) };
    this.memo.set(key, { generation, second: nowS, changes });
    return changes;
  }
}
