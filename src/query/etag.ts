import { createHash, randomBytes, type Hash } from 'node:crypto';
import type { Store } from '../store/store.js';
import { selectRows } from './execute.js';
import { planKey, type Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';

/** Characters of the hash in a tag: 132 bits, base64url. */
const TAG_CHARS = 22;

/** A plan's last tag, and the snapshot (by generation, never the store itself) and window it was worked out for. */
interface Remembered {
  generation: number;
  end: number;
  /** The second, for a change set; -1 for the others. */
  second: number;
  tag: string;
  /** The ETag header of `tag`, once asked for. */
  etag?: string;
}

/**
 * The ETags of /api answers (docs/api.md, ETag and wait), worked out from the selection,
 * never from the body's bytes: a hash of the snapshot's content, the plan's
 * canonical key, and what identifies the selected rows.
 *
 * Within one snapshot the window only narrows as time passes, and the
 * matches of a window are a prefix of the snapshot's matches in row order.
 * So for the default order, and for counts, the number of rows selected
 * identifies them: a count-limited query keeps its tag while its rows stay in
 * the window, and a full-window one changes as soon as a row leaves. Sorted
 * by ping or works, a row leaving the window may be replaced by another at
 * the same position: those tags hash the selected row numbers themselves.
 *
 * Nothing here depends on the process, so instances that load the same file
 * agree. Each plan remembers its last tag with the snapshot and window it
 * was worked out for: polling clients cost one lookup. Plans outlive
 * snapshots (QueryMemo keeps them), so what a plan remembers names its
 * snapshot by generation: a reference would keep every swapped-out store
 * alive for as long as the plan is remembered.
 */
export class Tagger {
  private readonly remembered = new WeakMap<Plan, Remembered>();

  constructor(private readonly scratch: QueryScratch) {}

  /**
   * The tag of what `plan` selects on `store` in the window ending at row
   * `end` (`sort=random`: of its matches) at second `nowS`. A change set is
   * named by its cursor and the second, which its body carries.
   */
  selectionTag(store: Store, plan: Plan, end: number, nowS: number): string {
    return this.remember(store, plan, end, nowS).tag;
  }

  /** The ETag header of an answer: every random order has one of its own. */
  etag(store: Store, plan: Plan, end: number, nowS: number): string {
    const r = this.remember(store, plan, end, nowS);
    if (plan.sort === 'random') return `W/"${r.tag}${randomBytes(9).toString('base64url')}"`;
    // Made once per tag: answers whose heads are remembered compare it by identity.
    return (r.etag ??= `W/"${r.tag}"`);
  }

  /** Whether the tag of `plan` on `store` in this window is remembered: asking for it costs a lookup. */
  knows(store: Store, plan: Plan, end: number, nowS: number): boolean {
    const r = this.remembered.get(plan);
    return r !== undefined && r.generation === store.source.generation && r.end === end && r.second === (plan.since ? nowS : -1);
  }

  private remember(store: Store, plan: Plan, end: number, nowS: number): Remembered {
    const r = this.remembered.get(plan);
    const generation = store.source.generation;
    const second = plan.since ? nowS : -1;
    if (r !== undefined && r.generation === generation && r.end === end && r.second === second) return r;
    const tag = plan.since ? this.hash(store, plan).update(String(nowS)).digest('base64url').slice(0, TAG_CHARS) : this.compute(store, plan, end);
    const fresh: Remembered = { generation, end, second, tag };
    this.remembered.set(plan, fresh);
    return fresh;
  }

  private compute(store: Store, plan: Plan, end: number): string {
    const sorted = plan.sort === 'ping' || plan.sort === 'works';
    // A random order's matches are those of the default order without paging.
    const selected = plan.sort === 'random' ? { ...plan, sort: null, offset: null, count: null, format: 'array' as const } : plan;
    const n = selectRows(store, selected, end, this.scratch);
    const h = this.hash(store, plan).update(String(n));
    if (sorted) h.update(this.scratch.rows.subarray(0, n));
    return h.digest('base64url').slice(0, TAG_CHARS);
  }

  private hash(store: Store, plan: Plan): Hash {
    return createHash('sha256').update(store.meta.contentHash).update('\0').update(planKey(plan)).update('\0');
  }
}
