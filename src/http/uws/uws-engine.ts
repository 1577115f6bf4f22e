import type { App, Engine, ListenSocket, Route, Routes, Serve } from '../engine.js';
import { TLS12_CIPHERS, withPairFiles, type TlsPair } from '../tls-pair.js';
import { loadUws, uwsBuild, type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket } from './load.js';
import { UwsExchange, type UwsState } from './uws-exchange.js';

type UwsHandler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * Binds with SO_REUSEPORT unless exclusive: by default uWebSockets.js always
 * does, and a second instance would silently share the port.
 */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
const LIBUS_LISTEN_DEFAULT = 0;

/** An app of uWebSockets.js: a renewed certificate needs a new one (SSLApp reads its files once). */
class UwsApp implements App {
  constructor(private readonly app: TemplatedApp, private readonly state: UwsState) {}

  listen(host: string, port: number, exclusive: boolean): Promise<ListenSocket | null> {
    const uws = loadUws();
    return new Promise((resolve) => {
      (this.app.listen as unknown as (h: string, p: number, o: number, cb: (t: us_listen_socket | false) => void) => void)(host, port, exclusive ? LIBUS_LISTEN_EXCLUSIVE_PORT : LIBUS_LISTEN_DEFAULT, (token) => {
        if (!token) return resolve(null);
        resolve({ port: uws.us_socket_local_port(token as never), close: () => uws.us_listen_socket_close(token) });
      });
    });
  }

  close(): void {
    this.app.close();
  }

  drain(): void {
    this.state.draining = true;
  }

  closeQuiet(): null {
    // uWebSockets.js lists no connections: those left are closed with the app.
    return null;
  }
}

/** uWebSockets.js, from the first build that loads natively (load.ts). */
export function uwsEngine(): Engine {
  const build = uwsBuild();
  return {
    name: 'uws',
    build: build.label,
    native: build.native,
    refusesBadHeads: build.refusesBadHeads,
    refusesExpectations: false,
    timesOut: build.timesOut,
    sharesPorts: true,
    app(routes: Routes, tls: TlsPair | null): App {
      // SSLApp throws when the bytes make no context; they were checked before they were handed here (core/certificate.ts).
      const app = tls
        ? withPairFiles(tls, (certFile, keyFile) => loadUws().SSLApp({ cert_file_name: certFile, key_file_name: keyFile, ssl_ciphers: TLS12_CIPHERS }))
        : loadUws().App();
      const secure = tls !== null;
      const state: UwsState = { draining: false };
      const exchange = (serve: Serve, head: boolean, account: Route['account']): UwsHandler => (res, req) => serve(new UwsExchange(res, head, secure, account, state), req);
      const bind = (pattern: string, r: Route): void => {
        const other = exchange(r.other, false, r.account);
        const otherHead = exchange(r.other, true, r.account);
        if (pattern !== '/*') {
          app.get(pattern, exchange(r.get, false, r.account));
          // HEAD is not routed to get(): it needs its own route.
          app.head(pattern, exchange(r.head, true, r.account));
        }
        app.any(pattern, (res, req) => (req.getMethod() === 'head' ? otherHead : other)(res, req));
      };
      for (const r of routes.paths) bind(r.path, r);
      bind('/*', routes.other);
      return new UwsApp(app, state);
    },
    limits: () => [],
  };
}
