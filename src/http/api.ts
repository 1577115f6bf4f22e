import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { subnetOf, type AddressSet } from '../access/address.js';
import type { KeysInForce } from '../access/keys-feed.js';
import type { KeyEntry } from '../access/keys.js';
import type { Limiter, Verdict } from '../access/limiter.js';
import { hasRateFields, rateLimitHeaders } from '../access/rate-limit-headers.js';
import type { QueryMemo } from '../query/query-memo.js';
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
import type { Headers } from './head.js';
import { clientOf } from './client-address.js';
import type { Sender } from './sender.js';
import type { Turns } from './turns.js';
import { ACCEPT_ENCODING, IF_NONE_MATCH, type Request } from './engine.js';
import type { Waiters } from './waiters.js';
import { asBuffer, type Repeats } from './repeats.js';

export const MAX_TARGET_BYTES = 8192;
/** A query this long fits the limit with any path of a few hundred bytes, even as 3-byte UTF-8 throughout. */
const SHORT_QUERY_CHARS = MAX_TARGET_BYTES / 3 - 256;
const NO_HEADERS: Headers = [];

/** The request headers an answer needs, read before the handler returns. */
interface RequestHeaders {
  acceptEncoding: string;
  ifNoneMatch: string;
}
type MemoEntry = ReturnType<QueryMemo['read']>;

export interface ApiDeps {
  clock: Clock;
  feed: StoreFeed;
  keys: KeysInForce;
  limiter: Limiter;
  trustProxy: AddressSet;
  queries: QueryMemo;
  selector: Selector;
  turns: Turns;
  answers: Answers;
  waiters: Waiters;
  sender: Sender;
  metrics: Metrics;
  repeats: Repeats;
  log: Logger;
}

/** What a request's answer needs to be remembered for the next identical one (repeats.ts): null where it may not be. */
interface Seed {
  query: string;
  key: string;
  entry: KeyEntry;
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

  /** The checks of the errors of docs/api.md after the limits, once the limiter has decided, then the answer. */
  const admitted = (ex: Exchange, memo: MemoEntry, entry: KeyEntry, verdict: Verdict, headers: RequestHeaders, nowMs: number, monoMs: number, seed: Seed | null): void => {
    const allowance = !hasRateFields(entry) ? null : verdict.allowance !== undefined ? verdict.allowance : deps.limiter.allowance(entry, nowMs, monoMs);
    const rate = allowance ? rateLimitHeaders(entry, allowance) : NO_HEADERS;
    if (!verdict.ok) {
      if (verdict.reason.limit !== 'unavailable') deps.metrics.rejected(verdict.reason.limit);
      return sender.error(ex, limitFailure(verdict.reason, verdict.retryAfterS), rate);
    }
    // From here on the request is counted, whatever its outcome.
    answer(ex, memo, headers, rate, nowMs, true, rate === NO_HEADERS && entry.limits.subnets === null ? seed : null);
  };

  /** The answer once the limiter has decided: at once, or after a round trip to a shared limiter, when `req` is gone. */
  const decided = (ex: Exchange, memo: MemoEntry, entry: KeyEntry, verdict: Verdict | Promise<Verdict>, headers: RequestHeaders, nowMs: number, monoMs: number, seed: Seed | null): void => {
    if (!(verdict instanceof Promise)) return admitted(ex, memo, entry, verdict, headers, nowMs, monoMs, seed);
    ex.defer<Verdict | null>(
      (settle) => {
        verdict.then(settle, (err: unknown) => {
          deps.log.error({ event: 'limiter_failed', err }, 'the usage limiter failed');
          settle(null);
        });
      },
      (v) => (v ? admitted(ex, memo, entry, v, headers, deps.clock.nowMs(), deps.clock.monotonicMs(), null) : sender.error(ex, HTTP_FAILURES.internal)),
    );
  };

  /**
   * A request identical to one answered in this second, on this snapshot,
   * for the same key and coding (repeats.ts): the key's check, the limiter,
   * and the remembered bytes. False, having done nothing, when it is not
   * one; anything but a plain admission goes on down the whole path.
   */
  const repeat = (ex: Exchange, req: Request, query: string): boolean => {
    const r = deps.repeats.get(query);
    if (r === undefined) return false;
    const store = deps.feed.current;
    const nowMs = deps.clock.nowMs();
    if (store === null || store.source.generation !== r.generation || Math.floor(nowMs / 1000) !== r.second || r.body.gone) return false;
    const acceptEncoding = req.getHeader(ACCEPT_ENCODING);
    if (acceptEncoding !== r.acceptEncoding) return false;
    const inm = req.getHeader(IF_NONE_MATCH);
    if (inm !== '' && inm !== r.etag) return false;
    const entry = deps.keys.table.find(r.key, nowMs);
    if (entry !== r.entry) return false;
    ex.keyLabel = entry.label;
    const monoMs = deps.clock.monotonicMs();
    // A key without a subnet limit: its subnet is not read.
    const verdict = deps.limiter.admit(entry, 0, nowMs, monoMs);
    if (verdict instanceof Promise || !verdict.ok) {
      decided(ex, deps.queries.read(query), entry, verdict, { acceptEncoding, ifNoneMatch: inm }, nowMs, monoMs, null);
      return true;
    }
    deps.repeats.hits++;
    if (inm !== '') sender.notModified(ex, r.notModified);
    else sender.bytes(ex, r.ok, r.bytes);
    return true;
  };

  /**
   * The answer of a counted request at `nowMs`. One whose selection takes a
   * pass over much of the store waits for a turn of its own first (`mayWait`),
   * and is then answered as of that turn.
   */
  const answer = (ex: Exchange, memo: MemoEntry, headers: RequestHeaders, rate: Headers, nowMs: number, mayWait: boolean, seed: Seed | null): void => {
    const store = deps.feed.current;
    const parsed = deps.queries.plan(memo, store?.meta.services ?? DEFAULT_SERVICES);
    if (!parsed.ok) return sender.error(ex, HTTP_FAILURES.badParameter(parsed.message), rate);
    if (!store) return sender.error(ex, HTTP_FAILURES.notLoaded, rate);
    const forged = parsed.plan.since && forgedCursor(parsed.plan.since, Math.floor(nowMs / 1000));
    if (forged) return sender.error(ex, HTTP_FAILURES.badParameter(`Invalid since "${parsed.plan.since!.text}": ${forged}`), rate);
    const end = windowEnd(store, parsed.plan, nowMs);
    if (mayWait && deps.selector.heavy(store, parsed.plan, nowMs, end)) {
      return ex.defer<null>((settle) => deps.turns.enqueue(() => settle(null)), () => answer(ex, memo, headers, rate, deps.clock.nowMs(), false, null));
    }

    const selection = deps.selector.select(store, parsed.plan, nowMs, end);
    const encoding = codings.negotiate(headers.acceptEncoding);
    if (headers.ifNoneMatch !== '' && ifNoneMatch(headers.ifNoneMatch, selection.etag)) {
      // Past --max-held, a request with `wait` is answered as if it had none.
      if (selection.plan.wait !== null && deps.waiters.hold(ex, memo, selection, encoding, rate)) return;
      return deps.answers.notModified(ex, selection.plan, validators(selection, rate));
    }
    // A change set with `wait` is held while it is empty (docs/api.md, Keeping a list).
    if (selection.changes !== null && selection.plan.wait !== null && isEmpty(selection.changes) && deps.waiters.holdChanges(ex, memo, selection, encoding, rate)) return;
    const plan = selection.plan;
    if (seed === null || plan.wait !== null || plan.since !== null || plan.sort === 'random') return deps.answers.ok(ex, selection, encoding, rate);
    const nowS = Math.floor(nowMs / 1000);
    deps.answers.ok(ex, selection, encoding, rate, undefined, (h, source) => {
      if (source.kept === undefined) return deps.repeats.forget(seed.query);
      const notModified = deps.answers.notModifiedHead(plan, validators(selection, rate));
      deps.repeats.remember(seed.query, { key: seed.key, entry: seed.entry, acceptEncoding: headers.acceptEncoding, generation: store.source.generation, second: nowS, etag: selection.etag, ok: h, notModified, body: source.kept, bytes: asBuffer(source.kept.bytes) });
    });
  };

  return (ex, req) => {
    const query = req.getQuery();
    // The path of this route is short: only a long query can make the target too long.
    if (query !== undefined && query.length > SHORT_QUERY_CHARS && targetTooLong(req.getUrl(), query)) return sender.error(ex, HTTP_FAILURES.uriTooLong);
    if (query !== undefined && repeat(ex, req, query)) return;
    const memo = deps.queries.read(query);
    const raw = memo.raw;

    const presented = raw.values.get('key');
    if (raw.malformed === 'key') return sender.error(ex, HTTP_FAILURES.keyMalformed);
    if (!presented) return sender.error(ex, HTTP_FAILURES.keyMissing);
    if (presented.length > 1) return sender.error(ex, HTTP_FAILURES.keyRepeated);
    const nowMs = deps.clock.nowMs();
    const entry = deps.keys.table.find(presented[0], nowMs);
    if (!entry) return sender.error(ex, HTTP_FAILURES.keyInvalid);
    ex.keyLabel = entry.label;

    // The client's subnet, for a key that has a subnet limit: the TCP peer's, or with --trust-proxy the client it forwards for.
    let subnet = 0;
    if (entry.limits.subnets !== null) {
      subnet = subnetOf(clientOf(ex, req, deps.trustProxy) ?? { v4: 0 });
    }
    const monoMs = deps.clock.monotonicMs();
    // Read now: after a round trip to a shared limiter, `req` is gone.
    const headers: RequestHeaders = { acceptEncoding: req.getHeader(ACCEPT_ENCODING), ifNoneMatch: req.getHeader(IF_NONE_MATCH) };
    const verdict = deps.limiter.admit(entry, subnet, nowMs, monoMs);
    decided(ex, memo, entry, verdict, headers, nowMs, monoMs, query === undefined ? null : { query, key: presented[0], entry });
  };
}
