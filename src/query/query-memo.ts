import { parsePlan, type ParseResult } from './parse.js';
import { readQuery, type RawParams } from './query-string.js';

/** Query strings remembered, and the longest remembered. */
const MAX_ENTRIES = 4096;
const MAX_QUERY_CHARS = 1024;

export interface MemoEntry<A> {
  raw: RawParams;
  parsed: ParseResult | null;
  /** The service names the plan was parsed against. */
  services: readonly string[] | null;
  /** The last answer given to the query, for the next identical request (http/repeats.ts); null once a swap makes it stale. */
  answer: A | null;
}

/**
 * Parsed query strings, remembered: clients poll with the same query again
 * and again, and reading and validating it is most of the work of a small
 * answer. They are what is asked, without the key and the parameters the
 * service ignores (query-split.ts), so every client of a query finds it
 * with one lookup. A plan is parsed again when the snapshot's service names
 * change. Parsing has no side effects and the results are never changed, so
 * a remembered one is exactly what parsing again would give. The oldest
 * entry makes way for a new one.
 */
export class QueryMemo<A = unknown> {
  private readonly entries = new Map<string, MemoEntry<A>>();

  /** The decoded parameters of a query string. */
  read(query: string | undefined): MemoEntry<A> {
    const q = query ?? '';
    let e = this.entries.get(q);
    if (e) return e;
    e = { raw: readQuery(query), parsed: null, services: null, answer: null };
    if (q.length <= MAX_QUERY_CHARS) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(q, e);
    }
    return e;
  }

  /** The validated plan of an entry, for a snapshot with these service names. */
  plan(e: MemoEntry<A>, services: readonly string[]): ParseResult {
    if (e.parsed === null || e.services !== services) {
      e.parsed = parsePlan(e.raw, services);
      e.services = services;
    }
    return e.parsed;
  }

  /** Forgets every remembered answer (on a swap: nothing outlives its snapshot). */
  forgetAnswers(): void {
    for (const e of this.entries.values()) e.answer = null;
  }
}
