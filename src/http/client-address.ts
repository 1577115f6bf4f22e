import { clientAddress, parseAddress, type Address, type AddressSet } from '../access/address.js';
import type { HttpRequest, HttpResponse } from './uws.js';

/**
 * Every X-Forwarded-For line of the request, in order, as one list: a proxy
 * such as haproxy appends its own line after the client's, and the
 * right-most addresses are the ones to believe (README, Usage limits).
 */
function forwardedFor(req: HttpRequest): string {
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
export function clientOf(res: HttpResponse, req: HttpRequest, trustProxy: AddressSet): Address | null {
  const peer = parseAddress(Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
  if (peer === null || !trustProxy.has(peer)) return peer;
  return clientAddress(peer, forwardedFor(req), trustProxy);
}
