import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { subnetOf, type AddressSet } from '../access/address.js';
import type { KeysInForce } from '../access/keys-feed.js';
import type { KeyEntry } from '../access/keys.js';
import type { Limiter, Verdict } from '../access/limiter.js';
import { hasRateFields, rateFields } from '../access/rate-limit-headers.js';
import { splitQuery, type Split } from '../query/query-split.js';
import { DEFAULT_SERVICES } from '../core/vocabulary.js';
import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import { validators, type Answers } from './answer.js';
import { isEmpty } from '../query/changes.js';
import { forgedCursor } from '../query/cursor.js';
import { windowEnd, type Selector } from '../query/selection.js';
import { ifNoneMatch } from './conditional.js';
import { HTTP_FAILURES, limitFailure } from './failures.js';
import { Codings } from './accept-encoding.js';
import type { Exchange } from './exchange.js';
import type { Metrics } from './metrics.js';
import { clientOf } from './client-address.js';
import type { Sender } from './sender.js';
import type { Turns } from './turns.js';
import { ACCEPT_ENCODING, IF_NONE_MATCH, type Request } from './engine.js';
import type { Waiters } from './waiters.js';
import { asBuffer, type AnswerMemo, type AnswerMemoEntry, type Repeats } from './repeats.js';

export const MAX_TARGET_BYTES = 8192;
/** A query this long fits the limit with any path of a few hundred bytes, even as 3-byte UTF-8 throughout. */
const SHORT_QUERY_CHARS = MAX_TARGET_BYTES / 3 - 256;
/** The split of a request without a query string: no key. */
const NOTHING_ASKED: Split = { what: '', key: null, keys: 0 };

/** The request headers an answer needs, read before the handler returns. */
interface RequestHeaders {
  acceptEncoding: string;
  ifNoneMatch: string;
}

export interface ApiDeps {
  clock: Clock;
  feed: StoreFeed;
  keys: KeysInForce;
  limiter: Limiter;
  trustProxy: AddressSet;
  queries: AnswerMemo;
  selector: Selector;
  turns: Turns;
  answers: Answers;
  waiters: Waiters;
  sender: Sender;
  metrics: Metrics;
  repeats: Repeats;
  log: Logger;
}

/** The bytes `s` had on the wire: the engine turned each raw byte that was not UTF-8 into one 3-byte U+FFFD (engine.ts). */
function wireBytes(s: string): number {
  let replaced = 0;
  for (let i = s.indexOf('\uFFFD'); i >= 0; i = s.indexOf('\uFFFD', i + 1)) replaced++;
  return Buffer.byteLength(s) - 2 * replaced;
}

/** True when the request target (path, `?`, query) is longer than 8192 bytes. */
export function targetTooLong(url: string, query: string | undefined): boolean {
  const chars = url.length + (query === undefined ? 0 : query.length + 1);
  if (chars <= MAX_TARGET_BYTES / 3) return false; // even all 3-byte UTF-8 would fit
  return wireBytes(url) + (query === undefined ? 0 : wireBytes(query) + 1) > MAX_TARGET_BYTES;
}

/**
 * GET and HEAD /api: checks in the order of the errors of docs/api.md, then the plan and
 * its ETag; a matching If-None-Match gets its 304, or with `wait` is held
 * until the answer changes; otherwise the body from its source (the cache,
 * a production under way, or a new one), handed to the sender. Everything
 * is read from `req` before the handler returns; an answer that must wait
 * for its body is written later.
 */
export function createApiHandler(deps: ApiDeps): (ex: Exchange, req: Request) => void {
  const { sender } = deps;
  const codings = new Codings();

  /**
   * The checks of the errors of docs/api.md after the limits, once the
   * limiter has decided, then the answer. `memo` is what is asked: read
   * only now, and found by `what` when the request was split.
   */
  const admitted = (ex: Exchange, what: string, memo: AnswerMemoEntry | null, entry: KeyEntry, verdict: Verdict, headers: RequestHeaders, nowMs: number, monoMs: number): void => {
    const allowance = !hasRateFields(entry) ? null : verdict.allowance !== undefined ? verdict.allowance : deps.limiter.allowance(entry, nowMs, monoMs);
    if (allowance) ex.rate = rateFields(entry, allowance);
    if (!verdict.ok) {
      if (verdict.reason.limit !== 'unavailable') deps.metrics.rejected(verdict.reason.limit);
      return sender.error(ex, limitFailure(verdict.reason, verdict.retryAfterS));
    }
    // From here on the request is counted, whatever its outcome.
    const asked = memo ?? deps.queries.read(what);
    if (!repeat(ex, asked, headers, nowMs)) answer(ex, asked, headers, nowMs, true, true);
  };

  /** The answer once the limiter has decided: at once, or after a round trip to a shared limiter, when `req` is gone. */
  const decided = (ex: Exchange, what: string, memo: AnswerMemoEntry | null, entry: KeyEntry, verdict: Verdict | Promise<Verdict>, headers: RequestHeaders, nowMs: number, monoMs: number): void => {
    if (!(verdict instanceof Promise)) return admitted(ex, what, memo, entry, verdict, headers, nowMs, monoMs);
    ex.defer<Verdict | null>(
      (settle) => {
        verdict.then(settle, (err: unknown) => {
          deps.log.error({ event: 'limiter_failed', err }, 'the usage limiter failed');
          settle(null);
        });
      },
      (v) => (v ? admitted(ex, what, memo, entry, v, headers, deps.clock.nowMs(), deps.clock.monotonicMs()) : sender.error(ex, HTTP_FAILURES.internal)),
    );
  };

  /**
   * The answer given to the same query in this second, on this snapshot,
   * in the same coding (repeats.ts), whichever key asked: its remembered
   * head and bytes. False, having done nothing, when there is none.
   */
  const repeat = (ex: Exchange, memo: AnswerMemoEntry, headers: RequestHeaders, nowMs: number): boolean => {
    const r = memo.answer;
    if (r === null) return false;
    const store = deps.feed.current;
    if (store === null || store.source.generation !== r.generation || Math.floor(nowMs / 1000) !== r.second || r.body.gone) return false;
    if (headers.acceptEncoding !== r.acceptEncoding) return false;
    const inm = headers.ifNoneMatch;
    if (inm !== '' && inm !== r.etag) return false;
    deps.repeats.hits++;
    if (inm !== '') sender.notModified(ex, r.notModified);
    else sender.bytes(ex, r.ok, r.bytes);
    return true;
  };

  /**
   * The answer of a counted request at `nowMs`. One whose selection takes a
   * pass over much of the store waits for a turn of its own first (`mayWait`),
   * and is then answered as of that turn. `remember`: its answer may serve
   * the next identical request.
   */
  const answer = (ex: Exchange, memo: AnswerMemoEntry, headers: RequestHeaders, nowMs: number, mayWait: boolean, remember: boolean): void => {
    const store = deps.feed.current;
    const parsed = deps.queries.plan(memo, store?.meta.services ?? DEFAULT_SERVICES);
    if (!parsed.ok) return sender.error(ex, HTTP_FAILURES.badParameter(parsed.message));
    if (!store) return sender.error(ex, HTTP_FAILURES.notLoaded);
    const forged = parsed.plan.since && forgedCursor(parsed.plan.since, Math.floor(nowMs / 1000));
    if (forged) return sender.error(ex, HTTP_FAILURES.badParameter(`Invalid since "${parsed.plan.since!.text}": ${forged}`));
    const end = windowEnd(store, parsed.plan, nowMs);
    if (mayWait && deps.selector.heavy(store, parsed.plan, nowMs, end)) {
      return ex.defer<null>((settle) => deps.turns.enqueue(() => settle(null)), () => answer(ex, memo, headers, deps.clock.nowMs(), false, false));
    }

    const selection = deps.selector.select(store, parsed.plan, nowMs, end);
    const encoding = codings.negotiate(headers.acceptEncoding);
    if (headers.ifNoneMatch !== '' && ifNoneMatch(headers.ifNoneMatch, selection.etag)) {
      // Past --max-held, a request with `wait` is answered as if it had none.
      if (selection.plan.wait !== null && deps.waiters.hold(ex, memo, selection, encoding)) return;
      return deps.answers.notModified(ex, selection.plan, validators(selection));
    }
    // A change set with `wait` is held while it is empty (docs/api.md, Keeping a list).
    if (selection.changes !== null && selection.plan.wait !== null && isEmpty(selection.changes) && deps.waiters.holdChanges(ex, memo, selection, encoding)) return;
    const plan = selection.plan;
    if (!remember || plan.wait !== null || plan.since !== null || plan.sort === 'random') return deps.answers.ok(ex, selection, encoding);
    const nowS = Math.floor(nowMs / 1000);
    deps.answers.ok(ex, selection, encoding, undefined, (h, source) => {
      if (source.kept === undefined) {
        memo.answer = null;
        return;
      }
      const notModified = deps.answers.notModifiedHead(plan, validators(selection));
      memo.answer = { acceptEncoding: headers.acceptEncoding, generation: store.source.generation, second: nowS, etag: selection.etag, ok: h, notModified, body: source.kept, bytes: asBuffer(source.kept.bytes) };
    });
  };

  return (ex, req) => {
    const query = req.getQuery();
    // The path of this route is short: only a long query can make the target too long.
    if (query !== undefined && query.length > SHORT_QUERY_CHARS && targetTooLong(req.getUrl(), query)) return sender.error(ex, HTTP_FAILURES.uriTooLong);
    // Who asks, split from what is asked; a query that does not split is read whole, as asked.
    const split = query === undefined ? NOTHING_ASKED : splitQuery(query);
    let memo: AnswerMemoEntry | null = null;
    let presented: string;
    if (split !== null) {
      if (split.keys === 0) return sender.error(ex, HTTP_FAILURES.keyMissing);
      if (split.keys > 1) return sender.error(ex, HTTP_FAILURES.keyRepeated);
      presented = split.key!;
    } else {
      memo = deps.queries.read(query);
      const raw = memo.raw;
      const given = raw.values.get('key');
      if (raw.malformed === 'key') return sender.error(ex, HTTP_FAILURES.keyMalformed);
      if (!given) return sender.error(ex, HTTP_FAILURES.keyMissing);
      if (given.length > 1) return sender.error(ex, HTTP_FAILURES.keyRepeated);
      presented = given[0];
    }
    const nowMs = deps.clock.nowMs();
    const entry = deps.keys.table.find(presented, nowMs);
    if (!entry) return sender.error(ex, HTTP_FAILURES.keyInvalid);
    ex.key = entry;

    // The client's subnet, for a key that has a subnet limit: the TCP peer's, or with --trust-proxy the client it forwards for.
    let subnet = 0;
    if (entry.limits.subnets !== null) {
      subnet = subnetOf(clientOf(ex, req, deps.trustProxy) ?? { v4: 0 });
    }
    const monoMs = deps.clock.monotonicMs();
    // Read now: after a round trip to a shared limiter, `req` is gone.
    const headers: RequestHeaders = { acceptEncoding: req.getHeader(ACCEPT_ENCODING), ifNoneMatch: req.getHeader(IF_NONE_MATCH) };
    const verdict = deps.limiter.admit(entry, subnet, nowMs, monoMs);
    decided(ex, split?.what ?? '', memo, entry, verdict, headers, nowMs, monoMs);
  };
}
