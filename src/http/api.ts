import type { Clock } from '../core/clock.js';
import { clientAddress, parseAddress, subnetOf, type AddressSet } from '../access/address.js';
import type { KeysFeed } from '../access/keys-feed.js';
import type { Limiter } from '../access/limiter.js';
import { rateLimitHeaders } from '../access/rate-limit-headers.js';
import { parsePlan } from '../query/parse.js';
import { planKey, type Plan } from '../query/plan.js';
import { readQuery } from '../query/query-string.js';
import { execute } from '../query/execute.js';
import { narrowBody, renderBody } from '../render/body.js';
import { OutputBuffer } from '../render/output-buffer.js';
import { JsonStream } from '../render/stream.js';
import { DEFAULT_SERVICES } from '../snapshot/format.js';
import type { SnapshotFeed } from '../snapshot/snapshot-feed.js';
import type { Metrics } from './metrics.js';
import type { ResponseCache } from './response-cache.js';
import { send, sendChunks, sendError, whenSent, type Headers } from './send.js';
import type { HttpRequest, HttpResponse } from './uws.js';

export const MAX_TARGET_BYTES = 8192;
/** Chunk buffers of finished streams kept for the next ones. */
const MAX_IDLE_CHUNK_BUFFERS = 4;

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const SUCCESS_HEADERS: Record<Plan['get'], Headers> = {
  txt: [['Content-Type', TEXT], ['Cache-Control', 'no-store']],
  'txt.file': [['Content-Type', TEXT], ['Cache-Control', 'no-store'], ['Content-Disposition', 'attachment; filename="proxies.txt"']],
  json: [['Content-Type', JSON_TYPE], ['Cache-Control', 'no-store']],
  'json.file': [['Content-Type', JSON_TYPE], ['Cache-Control', 'no-store'], ['Content-Disposition', 'attachment; filename="proxies.json"']],
};

export interface ApiDeps {
  clock: Clock;
  feed: SnapshotFeed;
  keys: KeysFeed;
  limiter: Limiter;
  trustProxy: AddressSet;
  cache: ResponseCache;
  metrics: Metrics;
}

/** The bytes `s` had on the wire: uWebSockets.js turned each raw byte that was not UTF-8 into one 3-byte U+FFFD. */
function wireBytes(s: string): number {
  let replaced = 0;
  for (let i = s.indexOf('\uFFFD'); i >= 0; i = s.indexOf('\uFFFD', i + 1)) replaced++;
  return Buffer.byteLength(s) - 2 * replaced;
}

/** How many of the ascending `rows` are below `end`. */
function countBelow(rows: Uint32Array, end: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid] < end) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** True when the request target (path, `?`, query) is longer than 8192 bytes. */
export function targetTooLong(url: string, query: string | undefined): boolean {
  const chars = url.length + (query === undefined ? 0 : query.length + 1);
  if (chars <= MAX_TARGET_BYTES / 3) return false; // even all 3-byte UTF-8 would fit
  return wireBytes(url) + (query === undefined ? 0 : wireBytes(query) + 1) > MAX_TARGET_BYTES;
}

/**
 * GET and HEAD /api. Synchronous from start to the first write: the store is
 * read once, the body is rendered into one reused buffer, and sent.
 * Checks run in the order of API.md 1.4.
 */
export function createApiHandler(deps: ApiDeps): (res: HttpResponse, req: HttpRequest, head: boolean) => void {
  const out = new OutputBuffer();
  /** The body of `res` is in `out` and still being sent: the buffer goes with it and comes back after. */
  const lendUntilSent = (res: HttpResponse): void => {
    const lent = out.lend();
    whenSent(res, () => out.giveBack(lent));
  };
  /** Each body being streamed writes its chunks into a buffer of its own, reused by the next streams. */
  const chunkBuffers: OutputBuffer[] = [];
  const stream = (res: HttpResponse, headers: Headers, body: JsonStream, head: boolean): void => {
    const chunks = chunkBuffers.pop() ?? new OutputBuffer();
    const recycle = (): void => {
      if (chunkBuffers.length < MAX_IDLE_CHUNK_BUFFERS) chunkBuffers.push(chunks);
    };
    if (sendChunks(res, '200 OK', headers, body.total, () => body.next(chunks), head)) {
      body.detach();
      whenSent(res, recycle);
    } else {
      recycle();
    }
  };
  return (res, req, head) => {
    const query = req.getQuery();
    if (targetTooLong(req.getUrl(), query)) return sendError(res, '414 URI Too Long', 'Request URI too long', head);
    const raw = readQuery(query);

    const presented = raw.values.get('key');
    if (raw.malformed === 'key') return sendError(res, '400 Bad Request', 'Malformed percent-encoding or UTF-8 in parameter key', head);
    if (!presented) return sendError(res, '401 Unauthorized', 'Access key not provided', head);
    if (presented.length > 1) return sendError(res, '400 Bad Request', 'Parameter key is given more than once', head);
    const nowMs = deps.clock.nowMs();
    const entry = deps.keys.table.find(presented[0], nowMs);
    if (!entry) return sendError(res, '401 Unauthorized', 'Invalid access key', head);
    res.keyLabel = entry.label;

    // The TCP peer, or with --trust-proxy the client it forwards for.
    const peer = parseAddress(Buffer.from(res.getRemoteAddressAsText()).toString('latin1')) ?? { v4: 0 };
    const client = deps.trustProxy.size > 0 ? clientAddress(peer, req.getHeader('x-forwarded-for'), deps.trustProxy) : peer;
    const monoMs = deps.clock.monotonicMs();
    const verdict = deps.limiter.admit(entry, subnetOf(client), nowMs, monoMs);
    const rate = rateLimitHeaders(entry, deps.limiter.allowance(entry, nowMs, monoMs));
    if (!verdict.ok) {
      deps.metrics.rejected(verdict.limit);
      return sendError(res, verdict.status, verdict.message, head, [['Retry-After', String(verdict.retryAfterS)], ...rate]);
    }
    // From here on the request is counted, whatever its outcome.

    const store = deps.feed.current;
    const parsed = parsePlan(raw, store?.meta.services ?? DEFAULT_SERVICES);
    if (!parsed.ok) return sendError(res, '400 Bad Request', parsed.message, head, rate);
    if (!store) return sendError(res, '503 Service Unavailable', 'Proxy list is not loaded yet', head, [['Retry-After', '5'], ...rate]);

    const plan = parsed.plan;
    const nowS = Math.floor(nowMs / 1000);
    const end = store.prefixEnd(nowS - plan.time);
    const headers = rate.length > 0 ? [...SUCCESS_HEADERS[plan.get], ...rate] : SUCCESS_HEADERS[plan.get];
    if (!deps.cache.enabled) {
      const n = execute(store, plan, end);
      const body = JsonStream.open(store, plan, store.scratch.rows, n);
      if (body) return stream(res, headers, body, head);
      out.reset();
      renderBody(out, store, plan, store.scratch.rows, n, nowMs);
      if (send(res, '200 OK', headers, out.view(), head)) lendUntilSent(res);
      return;
    }

    // The envelope carries the count and the time to the second, so wrapped
    // bodies are cached per window and second. Bare bodies are cached per
    // query, with the window they were selected from: as time moves on, the
    // window only narrows, and rows are freshest first, so the answer for a
    // narrower window is the cached rows below its end.
    const wrapped = plan.json && plan.wrap;
    const key = `${store.source.generation}|${wrapped ? `${end}|${nowS}` : ''}|${planKey(plan)}`;
    const cached = deps.cache.get(key);
    if (cached && cached.end === end) return send(res, '200 OK', headers, cached.bytes, head, cached.tail);
    if (cached?.rows && end < cached.end) {
      const k = countBelow(cached.rows, end);
      if (k === cached.rows.length) return send(res, '200 OK', headers, cached.bytes, head, cached.tail);
      const narrowed = narrowBody(store, plan, { bytes: cached.bytes, rows: cached.rows, ends: cached.ends }, k);
      deps.cache.put(key, { ...narrowed, end }, true);
      return send(res, '200 OK', headers, narrowed.bytes, head, narrowed.tail);
    }

    out.reset();
    const n = execute(store, plan, end);
    const rows = wrapped ? null : store.scratch.rows.slice(0, n);
    const ends = plan.json && !wrapped ? new Uint32Array(n) : null;
    renderBody(out, store, plan, store.scratch.rows, n, nowMs, ends);
    // Sent from the cache's copy when it keeps one.
    const kept = deps.cache.put(key, { bytes: out.view(), tail: null, end, rows, ends }, false);
    if (send(res, '200 OK', headers, kept ?? out.view(), head) && !kept) lendUntilSent(res);
  };
}
