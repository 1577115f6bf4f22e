import { parseAddress, type AddressSet } from '../access/address.js';
import type { Logger } from '../core/log.js';
import type { SnapshotFeed } from '../snapshot/snapshot-feed.js';
import { createApiHandler, targetTooLong, type ApiDeps } from './api.js';
import { healthReport } from './health.js';
import type { Metrics } from './metrics.js';
import { lastBytes, lastStatus, send, sendError, sentCount, watchAbort } from './send.js';
import { loadUws, type HttpRequest, type HttpResponse, type TemplatedApp } from './uws.js';

type Handler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * A synchronous throw inside a uWebSockets.js handler aborts the process, and
 * uncaughtException cannot catch it. Every handler runs inside this guard: the
 * error goes to the log and the client gets a bare 500.
 */
function guarded(log: Logger, metrics: Metrics, route: string, handler: Handler, accessLog: boolean): Handler {
  const count = metrics.forRoute(route);
  return (res, req) => {
    const started = performance.now();
    const sentBefore = sentCount;
    try {
      handler(res, req);
      if (sentCount === sentBefore) return; // answers asynchronously, and counts itself
      count(lastStatus, started);
      // The path only: the query string holds the key. The key is named by its label.
      if (accessLog) log.info({ event: 'access', method: req.getCaseSensitiveMethod(), path: req.getUrl(), status: Number(lastStatus.slice(0, 3)), bytes: lastBytes, us: Math.round((performance.now() - started) * 1000), key: res.keyLabel ?? null });
    } catch (err) {
      log.error({ event: 'handler_error', route, err }, 'unexpected error while answering');
      if (res.aborted) return;
      try {
        sendError(res, '500 Internal Server Error', 'Internal server error', false);
        count(lastStatus, started);
      } catch {
        res.close();
      }
    }
  };
}

export interface AppDeps extends ApiDeps {
  log: Logger;
  /** One log line per response. */
  accessLog: boolean;
  feed: SnapshotFeed;
  /** Who may read /metrics. */
  metricsAllow: AddressSet;
}

export function createApp(deps: AppDeps): TemplatedApp {
  const uws = loadUws();
  const app = uws.App();
  const api = createApiHandler(deps);
  const health = (res: HttpResponse, head: boolean): void => {
    const report = healthReport(deps.feed);
    send(res, report.ready ? '200 OK' : '503 Service Unavailable', [['Content-Type', 'application/json; charset=utf-8'], ['Cache-Control', 'no-store']], Buffer.from(report.body), head);
  };
  const countMetrics = deps.metrics.forRoute('/metrics');
  const metrics = (res: HttpResponse, head: boolean): void => {
    const started = performance.now();
    const peer = parseAddress(Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
    if (!peer || !deps.metricsAllow.has(peer)) return sendError(res, '403 Forbidden', 'Metrics are not available from this address', head);
    // The registry answers asynchronously: from here on the client may go away.
    watchAbort(res);
    deps.metrics.text().then(
      (text) => {
        if (res.aborted) return;
        send(res, '200 OK', [['Content-Type', deps.metrics.registry.contentType], ['Cache-Control', 'no-store']], Buffer.from(text), head);
        countMetrics(lastStatus, started);
      },
      (err: unknown) => {
        deps.log.error({ event: 'metrics_failed', err }, 'collecting metrics failed');
        if (!res.aborted) sendError(res, '500 Internal Server Error', 'Internal server error', head);
      },
    );
  };
  const notAllowed: Handler = (res, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sendError(res, '414 URI Too Long', 'Request URI too long', false);
    sendError(res, '405 Method Not Allowed', 'Method not allowed', req.getMethod() === 'head', [['Allow', 'GET, HEAD']]);
  };
  app.get('/api', guarded(deps.log, deps.metrics, '/api', (res, req) => api(res, req, false), deps.accessLog));
  // HEAD is not routed to get(): it needs its own route.
  app.head('/api', guarded(deps.log, deps.metrics, '/api', (res, req) => api(res, req, true), deps.accessLog));
  app.any('/api', guarded(deps.log, deps.metrics, '/api', notAllowed, deps.accessLog));
  app.get('/health', guarded(deps.log, deps.metrics, '/health', (res) => health(res, false), deps.accessLog));
  app.head('/health', guarded(deps.log, deps.metrics, '/health', (res) => health(res, true), deps.accessLog));
  app.any('/health', guarded(deps.log, deps.metrics, '/health', notAllowed, deps.accessLog));
  app.get('/metrics', guarded(deps.log, deps.metrics, '/metrics', (res) => metrics(res, false), deps.accessLog));
  app.head('/metrics', guarded(deps.log, deps.metrics, '/metrics', (res) => metrics(res, true), deps.accessLog));
  app.any('/metrics', guarded(deps.log, deps.metrics, '/metrics', notAllowed, deps.accessLog));
  app.any('/*', guarded(deps.log, deps.metrics, 'other', (res, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sendError(res, '414 URI Too Long', 'Request URI too long', req.getMethod() === 'head');
    sendError(res, '404 Not Found', 'Not found', req.getMethod() === 'head');
  }, deps.accessLog));
  return app;
}
