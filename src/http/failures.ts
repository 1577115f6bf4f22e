import { formatSubnet } from '../access/address.js';
import type { LimitReason } from '../access/limiter.js';

/**
 * Every failure the service answers over HTTP, once: its status line, the
 * text after `Error: ` (docs/api.md, Errors), and the Retry-After it carries, if
 * any. Handlers name a failure; they never spell a status or a message.
 */
export interface HttpFailure {
  status: string;
  message: string;
  retryAfterS?: number;
}

export const HTTP_FAILURES = {
  notFound: { status: '404 Not Found', message: 'Not found' },
  methodNotAllowed: { status: '405 Method Not Allowed', message: 'Method not allowed' },
  uriTooLong: { status: '414 URI Too Long', message: 'Request URI too long' },
  keyMissing: { status: '401 Unauthorized', message: 'Access key not provided' },
  keyInvalid: { status: '401 Unauthorized', message: 'Invalid access key' },
  keyMalformed: { status: '400 Bad Request', message: 'Malformed percent-encoding or UTF-8 in parameter key' },
  keyRepeated: { status: '400 Bad Request', message: 'Parameter key is given more than once' },
  notLoaded: { status: '503 Service Unavailable', message: 'Proxy list is not loaded yet', retryAfterS: 5 },
  metricsForbidden: { status: '403 Forbidden', message: 'Metrics are not available from this address' },
  usageForbidden: { status: '403 Forbidden', message: 'Usage is not available from this address' },
  /** A host name the operator did not allow, as a page of another site would send after rebinding its name to this host. */
  operatorHostForbidden: { status: '403 Forbidden', message: 'Metrics and usage answer only an address, localhost or a name of --operator-hosts in Host' },
  usageUnavailable: { status: '503 Service Unavailable', message: 'Usage limits are unavailable; retry shortly', retryAfterS: 1 },
  internal: { status: '500 Internal Server Error', message: 'Internal server error' },
  /** Request framing RFC 9112 calls invalid: the connection is closed after it. */
  badFraming: { status: '400 Bad Request', message: 'Invalid request framing: Content-Length headers that disagree or are not a number' },
  /** RFC 9112 3.2: a Host that is not an authority, or two Host lines; the connection is closed after it. */
  badHost: { status: '400 Bad Request', message: 'Invalid Host header: give one, with a name, an IPv4 address or a bracketed IPv6 address, and an optional port' },
  /** A request head over 64 KiB, refused by the parser of the node engine (uWebSockets.js answers its own 431). */
  headTooLarge: { status: '431 Request Header Fields Too Large', message: 'Request head too large: at most 64 KiB of request line and headers' },
  /** A request head of over 1,000 header lines, refused by the node engine (uWebSockets.js has limits of its own, docs/operations.md). */
  headLines: { status: '431 Request Header Fields Too Large', message: 'Request head has too many lines: at most 1,000 header lines' },
  /** An Expect other than 100-continue (RFC 9110 10.1.1); the connection is closed after it. */
  expectationFailed: { status: '417 Expectation Failed', message: 'Expectation failed: only Expect: 100-continue is understood' },
  /** A request target with raw bytes outside ASCII (RFC 9112 3.2), refused by the parser of the node engine; uWebSockets.js reads them as UTF-8. */
  badTarget: { status: '400 Bad Request', message: 'Invalid request target: percent-encode bytes outside ASCII (RFC 3986)' },
  /** A request that is not HTTP/1.x, refused by the parser of the node engine. */
  badRequest: { status: '400 Bad Request', message: 'Malformed HTTP/1.1 request' },
  /** An invalid parameter: the parser's one-line message names it. */
  badParameter: (message: string): HttpFailure => ({ status: '400 Bad Request', message }),
} satisfies Record<string, HttpFailure | ((...args: never[]) => HttpFailure)>;

/** The failure of a refusal by a usage limit, `retryAfterS` (whole seconds, at least 1) from now. */
export function limitFailure(reason: LimitReason, retryAfterS: number): HttpFailure {
  switch (reason.limit) {
    case 'subnet':
      return {
        status: '403 Forbidden',
        message: `Subnet limit exceeded: this key has been used from ${reason.subnets} subnets today, the most it may; ${formatSubnet(reason.subnet)} is not one of them. Subnets reset at 00:00 UTC+02:00`,
        retryAfterS,
      };
    case 'frequency':
      return { status: '429 Too Many Requests', message: `Request rate limit exceeded: at most ${reason.perWindow} requests per ${reason.windowS} s; retry in ${retryAfterS} s`, retryAfterS };
    case 'daily':
      return { status: '429 Too Many Requests', message: `Daily request limit exceeded: at most ${reason.daily} requests per day; the count resets at 00:00 UTC+02:00, in ${retryAfterS} s`, retryAfterS };
    case 'unavailable':
      return { status: '503 Service Unavailable', message: 'Usage limits are unavailable; retry shortly', retryAfterS: 1 };
  }
}
