import { parsePlan, type ParseResult } from './parse.js';
import { readQuery, type RawParams } from './query-string.js';

/** Query strings remembered, and the longest remembered. */
const MAX_ENTRIES = 4096;
const MAX_QUERY_CHARS = 1024;

interface Entry {
  raw: RawParams;
  parsed: ParseResult | null;
  /** The service names the plan was parsed against. */
  services: readonly string[] | null;
}

/**
 * Parsed query strings, remembered: clients poll with the same query again
 * and again, and reading and validating it is most of the work of a small
 * answer. A plan is parsed again when the snapshot's service names change.
 * Parsing has no side effects and the results are never changed, so a
 * remembered one is exactly what parsing again would give. The oldest entry
 * makes way for a new one.
 */
export class QueryMemo {
  private readonly entries = new Map<string, Entry>();

  /** The decoded parameters of a raw query string. */
  read(query: string | undefined): Entry {
    const q = query ?? '';
    let e = this.entries.get(q);
    if (e) return e;
    e = { raw: readQuery(query), parsed: null, services: null };
    if (q.length <= MAX_QUERY_CHARS) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(q, e);
    }
    return e;
  }

  /** The validated plan of an entry, for a snapshot with these service names. */
  plan(e: Entry, services: readonly string[]): ParseResult {
    if (e.parsed === null || e.services !== services) {
      e.parsed = parsePlan(e.raw, services);
      e.services = services;
    }
    return e.parsed;
  }
}
