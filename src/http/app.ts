import { readFileSync } from 'node:fs';
import type { AddressSet } from '../access/address.js';
import type { Logger } from '../core/log.js';
import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import { createApiHandler, targetTooLong, type ApiDeps } from './api.js';
import { clientOf, operatorHost, validHost } from './client-address.js';
import type { Exchange, RouteAccount } from './exchange.js';
import { HTTP_FAILURES, type HttpFailure } from './failures.js';
import { head, type Headers } from './head.js';
import { publicHealth } from './health.js';
import { Pages } from './pages.js';
import type { Lifecycle } from './lifecycle.js';
import type { TlsPair } from './tls-pair.js';
import { usageReport } from './usage.js';
import { ACCEPT_ENCODING, CONTENT_LENGTH, EXPECT, HOST, IF_NONE_MATCH, type App, type Engine, type Request, type LingerEnd, type Refusal, type Route, type Serve, type SocketPhase } from './engine.js';

type Handler = (ex: Exchange, req: Request) => void;

/**
 * Framing RFC 9112 (6.3) calls invalid that uWebSockets.js lets through:
 * Content-Length lines (or a list in one) that disagree, or one that is not
 * a number. uWebSockets.js reads the first: a proxy in front that read
 * another would see a second request where this reads a body, or the
 * reverse. Requests without the header cost one lookup.
 */
function badFraming(req: Request): boolean {
  if (req.getHeader(CONTENT_LENGTH) === '') return false;
  let first: string | null = null;
  let bad = false;
  req.forEach((name, value) => {
    if (bad || name !== 'content-length') return;
    for (let from = 0; from <= value.length; ) {
      let to = value.indexOf(',', from);
      if (to < 0) to = value.length;
      const n = significantDigits(value, from, to);
      from = to + 1;
      if (n === null || (first !== null && n !== first)) {
        bad = true;
        return;
      }
      first ??= n;
    }
  });
  return bad;
}
/**
 * The digits of one Content-Length item, `value` from `from` to `to`, less
 * spaces around them and leading zeros (so that equal lengths compare
 * equal as text, in time linear in their bytes); null when it is not a
 * number.
 */
function significantDigits(value: string, from: number, to: number): string | null {
  while (from < to && (value.charCodeAt(from) === 32 || value.charCodeAt(from) === 9)) from++;
  while (to > from && (value.charCodeAt(to - 1) === 32 || value.charCodeAt(to - 1) === 9)) to--;
  if (from === to) return null;
  let start = from;
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return null;
    if (c === 48 && start === i && i < to - 1) start++;
  }
  return value.slice(start, to);
}
/** An Expect the service cannot meet (RFC 9110 10.1.1): anything but 100-continue. */
const expectsMore = (expect: string): boolean => expect !== '' && expect.toLowerCase() !== '100-continue';
/** The Host lines of a request: getHeader reads only the first. */
function hostLines(req: Request): number {
  let n = 0;
  req.forEach((name) => {
    if (name === 'host') n++;
  });
  return n;
}
/** The methods every path answers, which a 405 names. */
const ALLOW: Headers = [['Allow', 'GET, HEAD']];
const JSON_HEADERS = [['Content-Type', 'application/json; charset=utf-8'], ['Cache-Control', 'no-store']] as const;
const HEALTHY = head('200 OK', JSON_HEADERS);
const UNHEALTHY = head('503 Service Unavailable', JSON_HEADERS);
/** The OpenAPI document of the service (openapi.json), as the repository holds it. */
const OPENAPI = readFileSync(new URL('../../../openapi.json', import.meta.url));
const OPENAPI_HEAD = head('200 OK', [['Content-Type', 'application/json; charset=utf-8'], ['Cache-Control', 'no-cache']]);

/** What /health and /metrics say: of the whole process, whichever thread is asked (docs/threads.md). */
export interface ProcessReports {
  health(): Promise<{ ready: boolean; body: string }>;
  metrics(): Promise<string>;
}

export interface AppDeps extends ApiDeps {
  /** The HTTP engine that serves the routes (engine.ts). */
  engine: Engine;
  life: Lifecycle;
  log: Logger;
  /** One log line per response. */
  accessLog: boolean;
  feed: StoreFeed;
  /** Who may read /metrics and /usage. */
  metricsAllow: AddressSet;
  /** The host names (lower case) that /metrics and /usage answer besides addresses and localhost. */
  operatorHosts: ReadonlySet<string>;
  reports: ProcessReports;
}

/**
 * The service's routes, and a maker of apps that serve them: plain HTTP, or
 * HTTPS with a certificate (a renewed one gets an app of its own,
 * docs/operations.md, HTTPS). Every app shares the handlers and their state.
 */
export function createAppMaker(deps: AppDeps): (tls: TlsPair | null) => App {
  const { log, sender, metrics: stats } = deps;
  /** Each answer is counted, and logged with --access-log: the path only, since the query holds the key, which is named by its label. */
  const account = (route: string): RouteAccount => {
    const count = stats.forRoute(route);
    return {
      answered(ex) {
        count(ex.status, ex.startedMs);
        if (deps.accessLog) log.info({ event: 'access', method: ex.method, path: ex.path, status: Number(ex.status.slice(0, 3)), bytes: ex.bytes, us: Math.round((performance.now() - ex.startedMs) * 1000), key: ex.key?.label ?? null });
      },
    };
  };
  /**
   * A synchronous throw inside a uWebSockets.js handler aborts the process,
   * and uncaughtException cannot catch it; so does returning without an
   * answer and without watching for the client to go away. Every handler,
   * on either engine, runs inside this guard: the error goes to the log and
   * the client gets a bare 500.
   */
  const guarded = (name: string, handler: Handler): Serve => (ex, req) => {
    if (deps.accessLog) {
      ex.method = req.getCaseSensitiveMethod();
      ex.path = req.getUrl();
    }
    try {
      // Read in the same pass as a request whose framing was invalid, from the same peer: on the same connection, as a rule.
      if (condemned !== null && condemned === ex.peer()) return sender.errorAndClose(ex, HTTP_FAILURES.badFraming);
      if (badFraming(req)) {
        condemn(ex.peer());
        return sender.errorAndClose(ex, HTTP_FAILURES.badFraming);
      }
      // RFC 9112 3.2: one Host, an authority. Clients send the same one request after request: it is checked once.
      const host = req.getHeader(HOST);
      if (host !== hostSeen) {
        if (!validHost(host)) return sender.errorAndClose(ex, HTTP_FAILURES.badHost);
        hostSeen = host;
      }
      if (countHosts && hostLines(req) > 1) return sender.errorAndClose(ex, HTTP_FAILURES.badHost);
      if (checkExpect && expectsMore(req.getHeader(EXPECT))) return sender.errorAndClose(ex, HTTP_FAILURES.expectationFailed);
      handler(ex, req);
      if (!ex.answered && !ex.later) throw new Error('the handler returned without an answer');
    } catch (err) {
      log.error({ event: 'handler_error', route: name, err }, 'unexpected error while answering');
      if (ex.aborted) return;
      try {
        if (ex.answered) ex.close();
        else sender.error(ex, HTTP_FAILURES.internal);
      } catch {
        ex.close();
      }
    } finally {
      ex.inHandler = false;
    }
  };

  /**
   * The peer of a request with invalid framing, until the current pass over
   * what sockets brought in is over. uWebSockets.js goes on with the requests
   * it already read after such a request, and then keeps the connection: each
   * gets the same 400, never an answer, and the last one closes it. It names
   * no connection (no port), so a request of another connection from that
   * address in that pass gets the 400 too; holding such requests back instead
   * makes uWebSockets.js close the connection before the 400 is sent. (Node's
   * parser refuses such a request itself: `refused` below.)
   */
  let condemned: string | null = null;
  /** The last Host found valid. */
  let hostSeen = '';
  /** Two Host lines reach the handlers of a build that does not refuse them itself. */
  const countHosts = !deps.engine.refusesBadHeads;
  const checkExpect = !deps.engine.refusesExpectations;
  const condemn = (peer: string): void => {
    condemned = peer;
    setImmediate(() => (condemned = null));
  };
  const api = createApiHandler(deps);
  const health: Handler = (ex, req) => {
    // Anyone but an operator gets the status and the snapshot's time alone (docs/operations.md, Health).
    if (operatorRefusal(ex, req) !== null) {
      const report = publicHealth(deps.feed, deps.life);
      return sender.bytes(ex, report.ready ? HEALTHY : UNHEALTHY, Buffer.from(report.body));
    }
    ex.defer<{ ready: boolean; body: string } | null>(
      (settle) => {
        deps.reports.health().then(settle, (err: unknown) => {
          log.error({ event: 'health_failed', err }, 'health failed');
          settle(null);
        });
      },
      (report) => (report ? sender.bytes(ex, report.ready ? HEALTHY : UNHEALTHY, Buffer.from(report.body)) : sender.error(ex, HTTP_FAILURES.internal)),
    );
  };
  /**
   * Why the client may not read /metrics, /usage and the whole /health, or
   * null if it may: its address as the limits read it must be in
   * `--metrics-allow`, and the request must name this host as the operator
   * does (docs/operations.md, HTTPS): a page of another site that rebinds
   * its name to this host sends that name, and is refused.
   */
  const operatorRefusal = (ex: Exchange, req: Request): 'address' | 'host' | null => {
    const client = clientOf(ex, req, deps.trustProxy);
    if (client === null || !deps.metricsAllow.has(client)) return 'address';
    if (!operatorHost(req.getHeader(HOST), deps.operatorHosts)) return 'host';
    return null;
  };
  /** Whether the client may read /metrics and /usage; if not, it is answered `forbidden`, or why its Host is refused. */
  const operator = (ex: Exchange, req: Request, forbidden: HttpFailure): boolean => {
    const refusal = operatorRefusal(ex, req);
    if (refusal !== null) sender.error(ex, refusal === 'address' ? forbidden : HTTP_FAILURES.operatorHostForbidden);
    return refusal === null;
  };
  /** Answers with what `work` makes, or `failure` when it fails; from here on the client may go away. */
  const later = (ex: Exchange, work: Promise<string>, contentType: string, failure: HttpFailure, event: string): void => {
    ex.defer<string | null>(
      (settle) => {
        work.then(settle, (err: unknown) => {
          log.error({ event, err }, `${event.replace('_', ' ')}`);
          settle(null);
        });
      },
      (text) => (text !== null ? sender.bytes(ex, head('200 OK', [['Content-Type', contentType], ['Cache-Control', 'no-store']]), Buffer.from(text)) : sender.error(ex, failure)),
    );
  };
  const metrics: Handler = (ex, req) => {
    if (!operator(ex, req, HTTP_FAILURES.metricsForbidden)) return;
    later(ex, deps.reports.metrics(), stats.registry.contentType, HTTP_FAILURES.internal, 'metrics_failed');
  };
  const usage: Handler = (ex, req) => {
    if (!operator(ex, req, HTTP_FAILURES.usageForbidden)) return;
    const kind = deps.life.limiter ? 'redis' : 'memory';
    later(ex, usageReport(deps.keys.table, deps.limiter, kind, deps.clock.nowMs()), JSON_HEADERS[0][1], HTTP_FAILURES.usageUnavailable, 'usage_failed');
  };
  const openapi: Handler = (ex) => sender.bytes(ex, OPENAPI_HEAD, OPENAPI);
  const notAllowed: Handler = (ex, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sender.error(ex, HTTP_FAILURES.uriTooLong);
    sender.error(ex, HTTP_FAILURES.methodNotAllowed, ALLOW);
  };
  const notFound: Handler = (ex, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sender.error(ex, HTTP_FAILURES.uriTooLong);
    sender.error(ex, HTTP_FAILURES.notFound);
  };

  const pages = new Pages(log);
  const handlers: ReadonlyArray<readonly [string, Handler]> = [
    ['/api', api], ['/health', health], ['/metrics', metrics], ['/usage', usage], ['/openapi.json', openapi],
    // The pages for people and their assets.
    ...pages.paths.map((path): [string, Handler] => [path, (ex, req) => pages.answer(ex, sender, path, req.getHeader(ACCEPT_ENCODING), req.getHeader(IF_NONE_MATCH))]),
  ];
  // The pages are counted as one route.
  const pageRoute = account('pages');
  const route = (path: string, name: string, handler: Handler, counted: RouteAccount): Route => {
    const serve = guarded(name, handler);
    return { path, account: counted, get: serve, head: serve, other: guarded(name, notAllowed) };
  };
  const routes = {
    paths: handlers.map(([path, handler]) => (pages.paths.includes(path) ? route(path, path, handler, pageRoute) : route(path, path, handler, account(path)))),
    other: (() => {
      const serve = guarded('other', notFound);
      return { path: '/*', account: account('other'), get: serve, head: serve, other: serve };
    })(),
    refused: (kind: Refusal) => {
      const failure = REFUSALS[kind];
      return { head: sender.errorHeadOf(failure, kind === 'method' ? ALLOW : []), body: Buffer.from(`Error: ${failure.message}`) };
    },
    lingered: (end: LingerEnd) => deps.metrics.lingered(end),
    socketFailed: (phase: SocketPhase) => deps.metrics.socketFailed(phase),
  };
  return (tls) => deps.engine.app(routes, tls);
}

/** What the service answers to a request an engine's parser refused. */
const REFUSALS: Record<Refusal, HttpFailure> = {
  headTooLarge: HTTP_FAILURES.headTooLarge,
  headLines: HTTP_FAILURES.headLines,
  badFraming: HTTP_FAILURES.badFraming,
  badTarget: HTTP_FAILURES.badTarget,
  badHost: HTTP_FAILURES.badHost,
  badRequest: HTTP_FAILURES.badRequest,
  expectation: HTTP_FAILURES.expectationFailed,
  method: HTTP_FAILURES.methodNotAllowed,
};
