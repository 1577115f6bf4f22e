import type { Source } from '../bodies/body.js';
import type { Encoding } from '../bodies/content-coding.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { MAX_WAIT_S, planKey, type Plan } from '../query/plan.js';
import type { QueryMemo } from '../query/query-memo.js';
import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import type { Store } from '../store/store.js';
import { isEmpty } from '../query/changes.js';
import { windowEnd, type Selection, type Selector } from '../query/selection.js';
import type { Answers } from './answer.js';
import type { Exchange } from './exchange.js';
import { HTTP_FAILURES } from './failures.js';
import type { HeldBudget } from './held-budget.js';
import type { Sender } from './sender.js';

/** How often held requests are looked at: deadlines, and the second turning (rows leave the window on whole seconds). */
const TICK_MS = 100;
/**
 * The longest a pass over held groups works in one turn of the event loop
 * before it lets other requests in: a thousand held selections, each with
 * a change set to work out, never stall the service (docs/api.md, Keeping a list).
 */
export const PASS_SLICE_MS = 4;

type MemoEntry = ReturnType<QueryMemo<unknown>['read']>;

/** A request held until its answer changes or its wait runs out. */
interface Held {
  ex: Exchange;
  group: Group;
  encoding: Encoding | null;
  /** The ETag it matched, which its 304 carries. */
  etag: string;
  /** performance.now() at which it is answered 304. */
  deadlineMs: number;
  done: boolean;
}

/**
 * The held requests of one query whose answer had one tag, or of one
 * change set's query (same cursor and output) while it is empty: they wake
 * together, and share one body.
 */
interface Group {
  key: string;
  /** Held for a change set: a request whose wait runs out gets the (empty) change set, not a 304. */
  changes: boolean;
  /** A change set's group: the end of its window on `store` when its change set was last found empty. */
  end: number;
  memo: MemoEntry;
  plan: Plan;
  store: Store;
  tag: string;
  members: Set<Held>;
}

/**
 * Requests with `wait` whose If-None-Match matched (docs/api.md, ETag and wait). The tags of
 * the queries held are worked out again when a snapshot is swapped in, and
 * each time the clock enters a new second (rows leave the window then); a
 * query whose tag changed wakes its requests with the new body, produced
 * once per content coding for all of them. A request whose wait runs out
 * gets its 304; one whose client goes away is dropped at once.
 */
export class Waiters {
  private readonly groups = new Map<string, Group>();
  /** Per wait in seconds, held requests in order of arrival: so also of deadline. */
  private readonly byWait: Held[][] = Array.from({ length: MAX_WAIT_S + 1 }, () => []);
  private ticker: NodeJS.Timeout | null = null;
  private second = -1;
  /** Requests held now, and ever. */
  count = 0;
  heldTotal = 0;
  /** Requests with `wait` answered at once because the process held --max-held already. */
  overflowed = 0;
  /** Released requests still in `byWait`, dropped from the queues' heads as their deadlines pass, or all at once when they outnumber the held ones. */
  private stale = 0;
  /** The groups a pass under way has yet to look at, and whether another pass is due when it ends. */
  private pass: Group[] | null = null;
  private passAgain = false;
  /** Passes over held groups, and the turns of the event loop they took. */
  passes = 0;
  passSlices = 0;

  constructor(
    private readonly clock: Clock,
    private readonly feed: StoreFeed,
    private readonly queries: QueryMemo,
    private readonly selector: Selector,
    private readonly answers: Answers,
    private readonly sender: Sender,
    private readonly log: Logger,
    /** The places for held requests, shared by every serving thread. */
    private readonly budget: HeldBudget,
    /** How long a pass works per turn (PASS_SLICE_MS); 0 looks at one group per turn. */
    private readonly sliceMs = PASS_SLICE_MS,
  ) {
    feed.onSwap(() => this.check());
  }

  /**
   * Holds `ex`, whose If-None-Match matched the selection's ETag, until the
   * selection changes, for `plan.wait` seconds at most. False when the
   * process holds --max-held requests already: `ex` is to be answered now.
   */
  hold(ex: Exchange, memo: MemoEntry, selection: Selection, encoding: Encoding | null): boolean {
    if (!this.admit()) return false;
    const { plan, store } = selection;
    const tag = this.selector.tagger.selectionTag(store, plan, selection.end, Math.floor(selection.nowMs / 1000));
    this.join(ex, `${tag}|${planKey(plan)}`, false, memo, selection, tag, encoding);
    return true;
  }

  /** Holds `ex`, whose change set is empty, until it is not, for `plan.wait` seconds at most; false as for `hold`. */
  holdChanges(ex: Exchange, memo: MemoEntry, selection: Selection, encoding: Encoding | null): boolean {
    if (!this.admit()) return false;
    this.join(ex, `changes|${planKey(selection.plan)}`, true, memo, selection, '', encoding);
    return true;
  }

  /** A place for one more held request, or the overflow counted. */
  private admit(): boolean {
    if (this.budget.take()) return true;
    this.overflowed++;
    return false;
  }

  private join(ex: Exchange, key: string, changes: boolean, memo: MemoEntry, selection: Selection, tag: string, encoding: Encoding | null): void {
    const { plan, store, etag } = selection;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { key, changes, end: selection.end, memo, plan, store, tag, members: new Set() }));
    const held: Held = { ex, group, encoding, etag, deadlineMs: performance.now() + plan.wait! * 1000, done: false };
    group.members.add(held);
    this.byWait[plan.wait!].push(held);
    this.count++;
    this.heldTotal++;
    ex.onAbort(() => this.release(held));
    if (this.ticker === null) {
      this.second = Math.floor(this.clock.nowMs() / 1000);
      this.ticker = setInterval(() => this.tick(), TICK_MS);
    }
  }

  /** Answers every held request now, as unchanged (at shutdown). */
  answerAll(): void {
    for (const group of [...this.groups.values()]) for (const held of [...group.members]) this.notModified(held);
    this.stopTicking();
  }

  private tick(): void {
    const now = performance.now();
    for (const queue of this.byWait) {
      let i = 0;
      while (i < queue.length && (queue[i].done || queue[i].deadlineMs <= now)) {
        if (!queue[i].done) this.notModified(queue[i]);
        i++;
      }
      // Every entry passed is released by now.
      if (i > 0) {
        queue.splice(0, i);
        this.stale -= i;
      }
    }
    if (this.stale > 1024 && this.stale > this.count) {
      for (let w = 0; w < this.byWait.length; w++) this.byWait[w] = this.byWait[w].filter((h) => !h.done);
      this.stale = 0;
    }
    const second = Math.floor(this.clock.nowMs() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.check();
    }
    if (this.count === 0) this.stopTicking();
  }

  /**
   * Wakes the groups whose answer changed: a pass over the groups held now,
   * a slice at a time. A check asked for while a pass is under way starts
   * another when it ends; the groups not yet looked at see the newest
   * snapshot anyway.
   */
  private check(): void {
    if (this.groups.size === 0) return;
    if (this.pass !== null) {
      this.passAgain = true;
      return;
    }
    this.pass = [...this.groups.values()];
    this.passes++;
    this.slice(0);
  }

  /** Looks at the pass's groups from `i` on for `sliceMs`, then yields to other work. */
  private slice(i: number): void {
    this.passSlices++;
    const pass = this.pass!;
    const stop = performance.now() + this.sliceMs;
    const store = this.feed.current;
    while (i < pass.length && store) {
      const group = pass[i++];
      if (group.members.size > 0) this.look(group, store);
      if (performance.now() >= stop) break;
    }
    if (i < pass.length && store) {
      setImmediate(() => this.slice(i));
      return;
    }
    this.pass = null;
    if (this.passAgain) {
      this.passAgain = false;
      this.check();
    }
  }

  /** Wakes `group` if its answer on `store` changed. */
  private look(group: Group, store: Store): void {
    const nowMs = this.clock.nowMs();
    try {
      const parsed = this.queries.plan(group.memo, store.meta.services);
      if (!parsed.ok) {
        // The new snapshot no longer has a service the query names.
        for (const held of this.take(group)) this.sender.error(held.ex, HTTP_FAILURES.badParameter(parsed.message));
        return;
      }
      const plan = parsed.plan;
      const end = windowEnd(store, plan, nowMs);
      if (group.changes) {
        // A change set depends on the store and the window's end alone (the cursor is fixed): while both stay, it stays empty.
        if (group.store !== store || group.end !== end) {
          // Worked out once for every request of the group, whose bodies read it.
          const selection = this.selector.select(store, plan, nowMs, end);
          if (!isEmpty(selection.changes!)) return this.wake(group, selection);
        }
        Object.assign(group, { store, plan, end });
        return;
      }
      if (this.selector.tagger.selectionTag(store, plan, end, Math.floor(nowMs / 1000)) !== group.tag) this.wake(group, this.selector.select(store, plan, nowMs, end));
      else {
        // The same answer, perhaps from a new snapshot of the same content: its 304 names that one.
        group.store = store;
        group.plan = plan;
      }
    } catch (err) {
      this.log.error({ event: 'held_request_failed', err }, 'answering held requests failed');
      for (const held of this.take(group)) this.sender.error(held.ex, HTTP_FAILURES.internal);
    }
  }

  /** Answers a group's requests with the new body: one source per content coding (each random order its own). */
  private wake(group: Group, selection: Selection): void {
    const shared = new Map<Encoding | 'identity', Source>();
    for (const held of this.take(group)) {
      const coding = held.encoding ?? 'identity';
      let source = selection.plan.sort === 'random' ? undefined : shared.get(coding);
      if (!source) shared.set(coding, (source = this.answers.source(selection, held.encoding, true)));
      this.answers.ok(held.ex, selection, held.encoding, source);
    }
  }

  /** Takes a group's requests out, to be answered now. */
  private take(group: Group): Held[] {
    const members = [...group.members];
    for (const held of members) this.release(held);
    return members.filter((h) => !h.ex.aborted);
  }

  /** A request whose wait ran out: 304, or for a change set the one of now (empty, as a rule). */
  private notModified(held: Held): void {
    const { group } = held;
    this.release(held);
    if (held.ex.aborted) return;
    const store = this.feed.current;
    if (group.changes && store) return this.answers.ok(held.ex, this.selector.select(store, group.plan, this.clock.nowMs()), held.encoding);
    this.answers.notModified(held.ex, group.plan, { etag: held.etag, store: group.store, cursor: null, reset: false });
  }

  /** No longer held: answered, or its client went away. */
  private release(held: Held): void {
    if (held.done) return;
    held.done = true;
    this.count--;
    this.budget.give();
    this.stale++;
    held.ex.onAbort(null);
    const group = held.group;
    group.members.delete(held);
    if (group.members.size === 0) this.groups.delete(group.key);
  }

  private stopTicking(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }
}
