import type { Get, Plan } from '../query/plan.js';
import type { Store } from '../store/store.js';
import type { Encoding } from './encoding.js';
import { HTTP_FAILURES } from './failures.js';
import type { Exchange } from './exchange.js';
import type { Source } from './production.js';
import type { Headers, Sender } from './sender.js';

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const DOWNLOAD: Partial<Record<Get, string>> = {
  'txt.file': 'attachment; filename="proxies.txt"',
  'json.file': 'attachment; filename="proxies.json"',
};

/** The fixed headers of a 200 (README, Parameters; README, ETag and wait; README, Compressed bodies), per output and content coding, built once. */
const fixedHeaders = (get: Get, encoding: string | null): Headers => {
  const headers: Array<[string, string]> = [['Content-Type', get.startsWith('txt') ? TEXT : JSON_TYPE], ['Cache-Control', 'private, no-cache'], ['Vary', 'Accept-Encoding']];
  const disposition = DOWNLOAD[get];
  if (disposition) headers.push(['Content-Disposition', disposition]);
  if (encoding) headers.push(['Content-Encoding', encoding]);
  return headers;
};
const FIXED = Object.fromEntries(
  (['txt', 'txt.file', 'json', 'json.file', 'stats'] as const).map((get) => [get, { identity: fixedHeaders(get, null), gzip: fixedHeaders(get, 'gzip'), br: fixedHeaders(get, 'br') }]),
) as Record<Get, Record<'identity' | Encoding, Headers>>;

/** What an /api answer of status 200 or 304 says besides its body. */
export interface Validators {
  etag: string;
  store: Store;
  /** The RateLimit fields of the key, if it has limits. */
  rate: Headers;
}

/** The headers of a 200 in `encoding`, or of a 304 (encoding null): the same but for the content coding. */
export function answerHeaders(plan: Plan, encoding: Encoding | null, v: Validators): Headers {
  return [...FIXED[plan.get][encoding ?? 'identity'], ['ETag', v.etag], ['Snapshot-Generated-At', String(v.store.meta.generatedAt)], ...v.rate];
}

/** Answers 200 with the body of `source`, at once or once its length is known. */
export function answerWith(sender: Sender, ex: Exchange, plan: Plan, source: Source, v: Validators): void {
  if (source.total >= 0) return sender.body(ex, '200 OK', answerHeaders(plan, source.encoding, v), source.open());
  // The body is being produced: the answer is written once its length (and its coding: a compression may fall back to the plain body) is known.
  const forget = source.whenReady((ok) => {
    if (ex.aborted) return;
    if (ok) sender.body(ex, '200 OK', answerHeaders(plan, source.encoding, v), source.open());
    else sender.error(ex, HTTP_FAILURES.internal);
  });
  // A client that goes away meanwhile no longer waits: work that no one else waits for stops.
  if (!ex.answered) ex.onAbort(forget);
}
