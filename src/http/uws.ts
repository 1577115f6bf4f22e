import { createRequire } from 'node:module';
import { CodedError } from '../core/errors.js';
import type * as UWS from 'uWebSockets.js';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';

/**
 * The uWebSockets.js package falls back, with only a console warning, to a slow
 * node:http shim on Node versions it has no binary for (or with
 * UWS_USE_FALLBACK set); in that shim tryEnd, onWritable and
 * getRemoteAddressAsText throw. The shim exports only App, _cfg,
 * us_listen_socket_close and us_socket_local_port; the native addon also has
 * SSLApp and getParts, so their absence means: refuse to run.
 */
export function loadUws(): typeof UWS {
  const require = createRequire(import.meta.url);
  const uws = require('uWebSockets.js') as typeof UWS;
  if (typeof uws.getParts !== 'function' || typeof uws.SSLApp !== 'function') {
    throw new CodedError(
      'E_UWS_FALLBACK',
      `uWebSockets.js has no native binary for Node ${process.versions.node} (ABI ${process.versions.modules}) or UWS_USE_FALLBACK is set; refusing to run on the slow fallback. Use Node.js 20.`,
    );
  }
  return uws;
}
