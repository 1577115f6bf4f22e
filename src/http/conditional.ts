/**
 * Whether an `If-None-Match` header matches `etag` (docs/api.md, ETag and wait): `*`, or a
 * list of entity tags compared weakly (RFC 9110 8.8.3.2: the opaque parts
 * are equal, with or without `W/`). Tags that are not well formed match
 * nothing.
 */
export function ifNoneMatch(header: string, etag: string): boolean {
  const wanted = opaque(etag);
  const h = header.trim();
  if (h === '*') return true;
  for (let at = 0; at < h.length;) {
    if (h.startsWith('W/', at)) at += 2;
    if (h[at] !== '"') return false;
    const close = h.indexOf('"', at + 1);
    if (close < 0) return false;
    if (h.slice(at + 1, close) === wanted) return true;
    at = close + 1;
    while (at < h.length && (h[at] === ' ' || h[at] === '\t' || h[at] === ',')) at++;
  }
  return false;
}

const opaque = (etag: string): string => etag.slice(etag.startsWith('W/') ? 3 : 1, -1);
