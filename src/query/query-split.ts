import { PLAN_PARAMETERS } from './parse.js';

/**
 * A query string split into who asks and what is asked (docs/design.md,
 * Who asks is not what is asked): the `key` it presents, and the rest
 * without the parameters the service ignores, such as a cache-buster
 * `_=1700000000`. Requests that differ only in those find one plan,
 * selection and answer.
 */
export interface Split {
  /** The query's pieces that a plan may read, in their order, joined by `&`. */
  readonly what: string;
  /** The presented key when exactly one non-empty `key` is given, else null. */
  readonly key: string | null;
  /** How many non-empty `key` values the query gives. */
  readonly keys: number;
}

/** What a piece must not hold to be read as it is: an escape, a space written as `+`, or a byte that was not UTF-8 (query-string.ts). */
function plain(query: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = query.charCodeAt(i);
    if (c === 0x25 || c === 0x2b || c === 0xfffd) return false;
  }
  return true;
}

/** The plan's parameter names by their length: a name is told without a string made for it (a cache-buster's `_` at once). */
const NAMES_BY_LENGTH: string[][] = [];
for (const name of PLAN_PARAMETERS) (NAMES_BY_LENGTH[name.length] ??= []).push(name);

/** Whether the name from `from` to `to` of `query` is one a plan reads. */
function isPlanParameter(query: string, from: number, to: number): boolean {
  const names = NAMES_BY_LENGTH[to - from];
  if (names === undefined) return false;
  for (let i = 0; i < names.length; i++) if (query.startsWith(names[i], from)) return true;
  return false;
}

/**
 * The split of `query`, or null where it is not plain enough to split
 * without decoding (a name with an escape, which may spell `key` or a
 * parameter; a key with one): then the whole query string is read as
 * before. What it drops could never change an answer or an error: a piece
 * dropped is neither `key` nor a parameter of the plan, and decodes as it
 * is, so it is not the malformed one that docs/api.md, Errors names.
 */
export function splitQuery(query: string): Split | null {
  // What is asked: one slice of the query while the pieces kept are side by side (the key first or last, as clients put it), else joined.
  let from = -1;
  let to = -1;
  let joined: string | null = null;
  let key: string | null = null;
  let keys = 0;
  let start = 0;
  const n = query.length;
  // Most query strings have nothing to decode: then no piece is looked at for it.
  const decodes = query.indexOf('%') >= 0 || query.indexOf('+') >= 0 || query.indexOf('\uFFFD') >= 0;
  while (start <= n) {
    let end = query.indexOf('&', start);
    if (end < 0) end = n;
    if (end > start) {
      let eq = query.indexOf('=', start);
      if (eq < 0 || eq > end) eq = end;
      if (decodes && !plain(query, start, eq)) return null;
      if (eq - start === 3 && query.startsWith('key', start)) {
        if (eq + 1 < end) {
          if (decodes && !plain(query, eq + 1, end)) return null;
          keys++;
          key = query.slice(eq + 1, end);
        }
      } else if (isPlanParameter(query, start, eq) || (decodes && !plain(query, eq + 1, end))) {
        // An ignored parameter whose value would not decode is kept: it may be the malformed one an error names.
        if (joined !== null) joined += '&' + query.slice(start, end);
        else if (from < 0) {
          from = start;
          to = end;
        }
        else if (to === start - 1) to = end;
        else joined = query.slice(from, to) + '&' + query.slice(start, end);
      }
    }
    start = end + 1;
  }
  const what = joined ?? (from < 0 ? '' : query.slice(from, to));
  return { what, key: keys === 1 ? key : null, keys };
}
