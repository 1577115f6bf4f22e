/**
 * The ceiling: a bare uWebSockets.js app that answers each path of the mix
 * with a precomputed body of the same bytes and headers as the server's.
 * Nothing on this transport can answer faster.
 * Usage: node ceiling.js BODIES_JSON PORT   (BODIES_JSON: [{path, contentType, disposition, file}])
 */
import { readFileSync } from 'node:fs';
import { send } from '../../src/http/send.js';
import { loadUws } from '../../src/http/uws.js';

const [index, port] = process.argv.slice(2);
const entries = JSON.parse(readFileSync(index, 'utf8')) as Array<{ path: string; contentType: string; disposition: string | null; file: string }>;
const answers = new Map(
  entries.map((e) => {
    const headers: Array<[string, string]> = [['Content-Type', e.contentType], ['Cache-Control', 'no-store']];
    if (e.disposition) headers.push(['Content-Disposition', e.disposition]);
    return [e.path.slice(e.path.indexOf('?') + 1), { headers, body: new Uint8Array(readFileSync(e.file)) }];
  }),
);
const uws = loadUws();
uws
  .App()
  .get('/api', (res, req) => {
    const a = answers.get(req.getQuery() ?? '');
    if (a) send(res, '200 OK', a.headers, a.body, false);
    else send(res, '404 Not Found', [], new Uint8Array(0), false);
  })
  .listen('127.0.0.1', Number(port), (token) => {
    if (!token) process.exit(1);
    process.stdout.write('ready\n');
  });
