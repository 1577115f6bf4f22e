import type { BodySources } from '../bodies/sources.js';
import type { Get, Plan } from '../query/plan.js';
import type { Selection } from '../query/selection.js';
import type { Store } from '../store/store.js';
import type { Source } from '../bodies/body.js';
import type { Encoding } from '../bodies/content-coding.js';
import { HTTP_FAILURES } from './failures.js';
import type { Exchange } from './exchange.js';
import { head, type Head, type Headers } from './head.js';
import type { Sender } from './sender.js';

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const CSV_TYPE = 'text/csv; charset=utf-8; header=present';
const DOWNLOAD: Partial<Record<Get, string>> = {
  'txt.file': 'attachment; filename="proxies.txt"',
  'json.file': 'attachment; filename="proxies.json"',
  'csv.file': 'attachment; filename="proxies.csv"',
};

/** The fixed headers of a 200 (docs/api.md, Parameters; docs/api.md, ETag and wait; docs/api.md, Compressed bodies), per output and content coding, built once. */
const fixedHeaders = (get: Get, encoding: string | null): Headers => {
  const headers: Array<[string, string]> = [['Content-Type', get.startsWith('txt') ? TEXT : get.startsWith('csv') ? CSV_TYPE : JSON_TYPE], ['Cache-Control', 'private, no-cache'], ['Vary', 'Accept-Encoding']];
  const disposition = DOWNLOAD[get];
  if (disposition) headers.push(['Content-Disposition', disposition]);
  if (encoding) headers.push(['Content-Encoding', encoding]);
  return headers;
};
const FIXED = Object.fromEntries(
  (['txt', 'txt.file', 'json', 'json.file', 'csv', 'csv.file', 'stats'] as const).map((get) => [get, { identity: fixedHeaders(get, null), gzip: fixedHeaders(get, 'gzip'), br: fixedHeaders(get, 'br') }]),
) as Record<Get, Record<'identity' | Encoding, Headers>>;

/** What an /api answer of status 200 or 304 says besides its body. */
export interface Validators {
  etag: string;
  store: Store;
  /** The cursor of a whole list or a change set (docs/api.md, Keeping a list), and whether a change set is a reset. */
  cursor: string | null;
  reset: boolean;
}

/** The headers of a 200 in `encoding`, or of a 304 (encoding null): the same but for the content coding. */
function answerHeaders(plan: Plan, encoding: Encoding | null, v: Validators): Headers {
  const headers: Array<readonly [string, string]> = [...FIXED[plan.get][encoding ?? 'identity'], ['ETag', v.etag], ['Snapshot-Generated-At', String(v.store.meta.generatedAt)]];
  if (v.cursor !== null) headers.push(['List-Cursor', v.cursor]);
  if (v.reset) headers.push(['List-Reset', '1']);
  return headers;
}

/**
 * The one path from a selection to its answer, for a request answered at
 * once (api.ts) and for one held until its answer changes (waiters.ts): a
 * 304, or a 200 with the body from its source.
 */
export class Answers {
  /** Per plan, its last head of a 200 and of a 304: polling clients get the same one again and again. */
  private readonly okHeads = new WeakMap<Plan, RememberedHead>();
  private readonly notModifiedHeads = new WeakMap<Plan, RememberedHead>();

  constructor(private readonly bodies: BodySources, private readonly sender: Sender) {}

  /** The source of the selection's body in `encoding`; `shared` for one that several requests read. */
  source(s: Selection, encoding: Encoding | null, shared = false): Source {
    return this.bodies.source(s.store, s.plan, s.end, s.nowMs, encoding, shared, s.changes);
  }

  /**
   * 200 with the body of `source`, the selection's own unless given: at
   * once, or once its length is known. `sent` is told the head of an
   * answer given at once, with its source.
   */
  ok(ex: Exchange, s: Selection, encoding: Encoding | null, source = this.source(s, encoding), sent?: (h: Head, source: Source) => void): void {
    const v = validators(s);
    const send = (): Head => {
      const h = this.head(this.okHeads, OK, s.plan, source.encoding, v);
      this.sender.body(ex, h, source.open());
      return h;
    };
    if (source.total >= 0) {
      const h = send();
      sent?.(h, source);
      return;
    }
    // The body is being produced: the answer is written once its length (and its coding: a compression may fall back to the plain body) is known.
    ex.defer<boolean>((settle) => source.whenReady(settle), (ok) => (ok ? send() : this.sender.error(ex, HTTP_FAILURES.internal)));
  }

  /** 304: the client has the body, and the cursor it came with. */
  notModified(ex: Exchange, plan: Plan, v: Validators): void {
    this.sender.notModified(ex, this.notModifiedHead(plan, v));
  }

  /** The head of a 304 to `plan`. */
  notModifiedHead(plan: Plan, v: Validators): Head {
    return this.head(this.notModifiedHeads, NOT_MODIFIED, plan, null, { ...v, cursor: null, reset: false });
  }

  /**
   * The head of an answer to `plan`: the one `memo` remembers for the plan
   * when made from the same validators, else a new one, then remembered.
   * A head is the answer's, whoever asks: the RateLimit fields of the key
   * that asked follow it (Exchange.rate).
   */
  private head(memo: WeakMap<Plan, RememberedHead>, status: string, plan: Plan, encoding: Encoding | null, v: Validators): Head {
    const generation = v.store.source.generation;
    const r = memo.get(plan);
    if (r !== undefined && r.generation === generation && r.encoding === encoding && r.etag === v.etag && r.cursor === v.cursor && r.reset === v.reset) return r.head;
    const h = head(status, answerHeaders(plan, encoding, v));
    // The snapshot by generation, never the store: plans outlive stores.
    memo.set(plan, { generation, encoding, etag: v.etag, cursor: v.cursor, reset: v.reset, head: h });
    return h;
  }
}

const OK = '200 OK';
const NOT_MODIFIED = '304 Not Modified';

/** A head, and the validators it was made from. */
interface RememberedHead {
  generation: number;
  encoding: Encoding | null;
  etag: string;
  cursor: string | null;
  reset: boolean;
  head: Head;
}

/** What a selection's answers say besides the body. */
export const validators = (s: Selection, etag = s.etag): Validators => ({ etag, store: s.store, cursor: s.cursor, reset: s.reset });

