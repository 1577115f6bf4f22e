/**
 * A strict application/x-www-form-urlencoded reader. uWebSockets.js's own
 * per-name lookup mis-parses inputs such as `?k&key=x` and decodes `%ZZ` to
 * garbage, so the raw query string is read once, here.
 */
export interface RawParams {
  /** Decoded name → decoded non-empty values, in order of appearance. */
  values: Map<string, string[]>;
  /** The first parameter whose name or value did not decode, if any. */
  malformed: string | null;
}

/**
 * uWebSockets.js hands the target over as UTF-8 and turns raw bytes that are
 * not UTF-8 into U+FFFD. No valid parameter holds that character, so its
 * presence marks the raw form as malformed, like a bad escape.
 */
const REPLACEMENT = '\uFFFD';

function decode(s: string): string | null {
  if (s.indexOf(REPLACEMENT) >= 0) return null;
  if (s.indexOf('%') < 0 && s.indexOf('+') < 0) return s;
  try {
    // decodeURIComponent rejects bad escapes and escapes of invalid UTF-8.
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

export function readQuery(query: string | undefined): RawParams {
  const values = new Map<string, string[]>();
  let malformed: string | null = null;
  if (!query) return { values, malformed };
  let start = 0;
  while (start <= query.length) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    if (end > start) {
      const eq = query.indexOf('=', start);
      const hasValue = eq >= 0 && eq < end;
      const name = decode(query.slice(start, hasValue ? eq : end));
      const value = hasValue ? decode(query.slice(eq + 1, end)) : '';
      if (name === null || value === null) {
        malformed ??= name ?? query.slice(start, hasValue ? eq : end);
      } else if (value !== '') {
        // An empty value counts as the parameter not given (docs/api.md, Parameters).
        const list = values.get(name);
        if (list) list.push(value);
        else values.set(name, [value]);
      }
    }
    start = end + 1;
  }
  return { values, malformed };
}
