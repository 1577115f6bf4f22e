/**
 * The ceiling: a bare uWebSockets.js app that answers each path with a
 * precomputed body of the same bytes and headers as the server's, sent the
 * textbook way (tryEnd, then onWritable). Nothing on this transport can
 * answer faster.
 * Usage: node ceiling.js BODIES_JSON PORT
 *   BODIES_JSON: [{path, headers: [[name, value]], file}]
 */
import { readFileSync } from 'node:fs';
import { loadUws, type HttpResponse } from '../../src/http/uws/load.js';
import { answerKey } from './answer-key.js';

const [index, port] = process.argv.slice(2);
const entries = JSON.parse(readFileSync(index, 'utf8')) as Array<{ path: string; headers: Array<[string, string]>; file: string }>;
const answers = new Map(entries.map((e) => [answerKey(e.path.slice(e.path.indexOf('?') + 1)), { headers: e.headers, body: new Uint8Array(readFileSync(e.file)) }]));

function send(res: HttpResponse, headers: Array<[string, string]>, body: Uint8Array): void {
  res.cork(() => {
    res.writeStatus('200 OK');
    for (const [name, value] of headers) res.writeHeader(name, value);
    const base = res.getWriteOffset();
    const [, done] = res.tryEnd(body, body.length);
    if (done) return;
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onWritable((offset) => {
      if (aborted) return true;
      const [ok] = res.tryEnd(body.subarray(offset - base), body.length);
      return ok;
    });
  });
}

loadUws()
  .App()
  .get('/api', (res, req) => {
    const a = answers.get(answerKey(req.getQuery() ?? ''));
    if (a) send(res, a.headers, a.body);
    else res.writeStatus('404 Not Found').end();
  })
  .listen('127.0.0.1', Number(port), (token) => {
    if (!token) process.exit(1);
    process.stdout.write('ready\n');
  });
// A profile (--cpu-prof) is written on a normal exit.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
