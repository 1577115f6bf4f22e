/**
 * The node engine with none of the service above it: its app answers each
 * path with a precomputed body through the sender, the write path of every
 * answer of the service, but without keys, limits, queries or the cache.
 * Beside the bare node:http server on the same bytes (node-ceiling.ts), it
 * tells what the engine costs from what the service's own work costs.
 * Usage: node node-engine-bare.js BODIES_JSON PORT
 *   BODIES_JSON: [{path, headers: [[name, value]], file}]
 */
import { readFileSync } from 'node:fs';
import { createLogger } from '../../src/core/log.js';
import type { Route, Serve } from '../../src/http/engine.js';
import { head } from '../../src/http/head.js';
import { nodeEngine } from '../../src/http/node/node-engine.js';
import { Sender } from '../../src/http/sender.js';

const [index, port] = process.argv.slice(2);
const entries = JSON.parse(readFileSync(index, 'utf8')) as Array<{ path: string; headers: Array<[string, string]>; file: string }>;
// head() adds X-Content-Type-Options itself.
const answers = new Map(entries.map((e) => [e.path.slice(e.path.indexOf('?') + 1), { head: head('200 OK', e.headers.filter(([n]) => n.toLowerCase() !== 'x-content-type-options')), body: readFileSync(e.file) }]));
const notFound = head('404 Not Found', []);
const sender = new Sender(createLogger('warn'));
const account = { answered: () => undefined };

const nothing = new Uint8Array(0);
const missing: Serve = (ex) => sender.bytes(ex, notFound, nothing);
const route: Route = {
  path: '/api',
  account,
  get: (ex, req) => {
    const a = answers.get(req.getQuery() ?? '');
    if (a) sender.bytes(ex, a.head, a.body);
    else missing(ex, req);
  },
  head: missing,
  other: missing,
};
const app = nodeEngine().app({ paths: [route], other: route, refused: () => ({ head: notFound, body: nothing }), lingered: () => undefined, socketFailed: () => undefined }, null);
await app.listen('127.0.0.1', Number(port), true);
process.stdout.write('ready\n');
// A profile (--cpu-prof) is written on a normal exit.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
