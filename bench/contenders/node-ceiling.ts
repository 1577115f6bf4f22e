/**
 * The node engine's ceiling: a bare node:http server that answers each path
 * with a precomputed body of the same bytes and headers as the server's,
 * the textbook way (writeHead, then end with the whole body). Nothing on
 * Node's http module can answer faster.
 * Usage: node node-ceiling.js BODIES_JSON PORT [WORK_US]
 *   BODIES_JSON: [{path, headers: [[name, value]], file}]
 *   WORK_US: microseconds of busy work before each answer, standing for
 *   what a real service computes per request (0 by default)
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { answerKey } from './answer-key.js';

const [index, port, workArg] = process.argv.slice(2);
const workNs = BigInt(Math.round(Number(workArg ?? 0) * 1000));
const entries = JSON.parse(readFileSync(index, 'utf8')) as Array<{ path: string; headers: Array<[string, string]>; file: string }>;
const answers = new Map(entries.map((e) => [answerKey(e.path.slice(e.path.indexOf('?') + 1)), { headers: e.headers.flat(), body: readFileSync(e.file) }]));

createServer((req, res) => {
  if (workNs > 0n) {
    const until = process.hrtime.bigint() + workNs;
    while (process.hrtime.bigint() < until);
  }
  const url = req.url!;
  const a = url.startsWith('/api?') ? answers.get(answerKey(url.slice(5))) : undefined;
  if (!a) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, [...a.headers, 'Content-Length', String(a.body.length)]);
  res.end(a.body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
// A profile (--cpu-prof) is written on a normal exit.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
