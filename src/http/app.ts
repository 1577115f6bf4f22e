import type { Logger } from '../core/log.js';
import type { SnapshotFeed } from '../snapshot/snapshot-feed.js';
import { createApiHandler, targetTooLong, type ApiDeps } from './api.js';
import { healthReport } from './health.js';
import { send, sendError } from './send.js';
import { loadUws, type HttpRequest, type HttpResponse, type TemplatedApp } from './uws.js';

type Handler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * A synchronous throw inside a uWebSockets.js handler aborts the process, and
 * uncaughtException cannot catch it. Every handler runs inside this guard: the
 * error goes to the log and the client gets a bare 500.
 */
function guarded(log: Logger, route: string, handler: Handler): Handler {
  return (res, req) => {
    try {
      handler(res, req);
    } catch (err) {
      log.error({ event: 'handler_error', route, err }, 'unexpected error while answering');
      if (res.aborted) return;
      try {
        sendError(res, '500 Internal Server Error', 'Internal server error', false);
      } catch {
        res.close();
      }
    }
  };
}

export interface AppDeps extends ApiDeps {
  log: Logger;
  feed: SnapshotFeed;
}

export function createApp(deps: AppDeps): TemplatedApp {
  const uws = loadUws();
  const app = uws.App();
  const api = createApiHandler(deps);
  const health = (res: HttpResponse, head: boolean): void => {
    const report = healthReport(deps.feed);
    send(res, report.ready ? '200 OK' : '503 Service Unavailable', [['Content-Type', 'application/json; charset=utf-8'], ['Cache-Control', 'no-store']], Buffer.from(report.body), head, false);
  };
  const notAllowed: Handler = (res, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sendError(res, '414 URI Too Long', 'Request URI too long', false);
    sendError(res, '405 Method Not Allowed', 'Method not allowed', req.getMethod() === 'head', [['Allow', 'GET, HEAD']]);
  };
  app.get('/api', guarded(deps.log, '/api', (res, req) => api(res, req, false)));
  // HEAD is not routed to get(): it needs its own route.
  app.head('/api', guarded(deps.log, '/api', (res, req) => api(res, req, true)));
  app.any('/api', guarded(deps.log, '/api', notAllowed));
  app.get('/health', guarded(deps.log, '/health', (res) => health(res, false)));
  app.head('/health', guarded(deps.log, '/health', (res) => health(res, true)));
  app.any('/health', guarded(deps.log, '/health', notAllowed));
  app.any('/*', guarded(deps.log, 'other', (res, req) => {
    if (targetTooLong(req.getUrl(), req.getQuery())) return sendError(res, '414 URI Too Long', 'Request URI too long', req.getMethod() === 'head');
    sendError(res, '404 Not Found', 'Not found', req.getMethod() === 'head');
  }));
  return app;
}
