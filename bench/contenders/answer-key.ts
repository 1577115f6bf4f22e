/**
 * What a bare server looks an answer up by. Normally the query string as
 * it is; under a crowd (CEILING_CROWD=1: every request with a key of its
 * own, first in the query, or a cache-buster `_=N`, last), the query string
 * without them, found with two scans as a bare server would.
 */
const CROWD = process.env.CEILING_CROWD === '1';

export function answerKey(query: string): string {
  if (!CROWD) return query;
  let q = query.startsWith('key=') ? query.slice(query.indexOf('&') + 1) : query;
  const buster = q.lastIndexOf('&_=');
  if (buster >= 0) q = q.slice(0, buster);
  return q;
}
