import { isIPv6 } from 'node:net';
import { clientAddress, parseAddress, type Address, type AddressSet } from '../access/address.js';
import type { Request } from './engine.js';
import type { Exchange } from './exchange.js';

/**
 * Every X-Forwarded-For line of the request, in order, as one list: a proxy
 * such as haproxy appends its own line after the client's, and the
 * right-most addresses are the ones to believe (docs/api.md, Usage limits).
 */
function forwardedFor(req: Request): string {
  let all = '';
  req.forEach((name, value) => {
    if (name === 'x-forwarded-for') all = all === '' ? value : `${all},${value}`;
  });
  return all;
}

/**
 * The client's address as the limits and the operator's endpoints read it:
 * the TCP peer's, or behind a peer of --trust-proxy the client it forwards
 * for (never the proxy's own). Null when the peer's address cannot be read.
 */
export function clientOf(ex: Exchange, req: Request, trustProxy: AddressSet): Address | null {
  const peer = ex.peerAddress();
  if (peer === null || !trustProxy.has(peer)) return peer;
  return clientAddress(peer, forwardedFor(req), trustProxy);
}

/** RFC 3986's authority without user information: a bracketed IPv6 address, or a name (an IPv4 address is one), and an optional port. */
const AUTHORITY = /^(?:\[([0-9A-Fa-f:.]+)\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::\d{0,5})?$/;

/**
 * Whether a Host header's value is an authority (RFC 9112 3.2; RFC 3986
 * 3.2): `[::1]evil.com` and `[::1].evil.com` are not. Empty is: a request
 * whose target has no authority sends it so.
 */
export function validHost(host: string): boolean {
  if (host === '') return true;
  const m = AUTHORITY.exec(host);
  return m !== null && (m[1] === undefined || isIPv6(m[1]));
}

/**
 * Whether a Host header names this host as the operator's endpoints accept:
 * none at all (HTTP/1.0), an address, localhost, or a name the operator
 * listed (`--operator-hosts`), with any port. A browser that a page of
 * another site steers here by rebinding that site's name sends that name.
 */
export function operatorHost(host: string, allowed: ReadonlySet<string>): boolean {
  if (host === '') return true;
  const name = (host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '')).toLowerCase();
  return name === 'localhost' || allowed.has(name) || parseAddress(name) !== null;
}
