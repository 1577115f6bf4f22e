/**
 * URLs that may carry secrets (docs/operations.md, Memory, hostile clients and secrets): credentials in the user
 * info (`http://user:pass@origin/...`, `redis://user:pass@...`) and tokens in
 * the query string (`?token=...`). Wherever a URL is shown (logs, /health,
 * errors) it is shown masked; where it is fetched, the credentials travel
 * as an Authorization header, since Node's fetch refuses a URL with them.
 */

const MASK = '***';

/** The URL as it may be shown: user, password and every query value replaced by ***. */
export function maskUrl(url: string): string {
  // A list of Redis seeds: each masked.
  if (url.includes(',') && /^rediss?:\/\/[^,]*,rediss?:\/\//.test(url)) return url.split(',').map(maskUrl).join(',');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // Not a URL: whatever could be user info or a query is masked all the same.
    return url.replace(/\/\/[^/@]*@/, `//${MASK}@`).replace(/\?.*$/, `?${MASK}`);
  }
  if (u.username) u.username = MASK;
  if (u.password) u.password = MASK;
  for (const name of new Set(u.searchParams.keys())) u.searchParams.set(name, MASK);
  return u.toString();
}

/** The URL without its user info, and that user info as a Basic Authorization header (null without any). */
export function splitCredentials(url: string): { url: string; authorization: string | null } {
  const u = new URL(url);
  if (!u.username && !u.password) return { url, authorization: null };
  const credentials = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: `Basic ${Buffer.from(credentials).toString('base64')}` };
}
