/**
 * The naive peer: the same API on node:http, with the reference engine of the
 * core tests (plain objects, Array.filter, JSON.stringify). What a capable
 * developer writes in an afternoon.
 * Usage: node naive-server.js SNAPSHOT PORT KEY
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { NaiveEngine } from '../../test/reference/naive-engine.js';

const [snapshotPath, port, key] = process.argv.slice(2);
const engine = NaiveEngine.fromFile(readFileSync(snapshotPath));

createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== '/api') {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Error: Not found');
    return;
  }
  const given = url.searchParams.get('key');
  if (!given || given !== key) {
    res.writeHead(401, { 'Content-Type': 'text/plain; charset=utf-8' }).end(given ? 'Error: Invalid access key' : 'Error: Access key not provided');
    return;
  }
  const answer = engine.answer(url.search.slice(1), Date.now());
  const headers: Record<string, string> = { 'Content-Type': answer.contentType, 'Cache-Control': 'no-store' };
  if (answer.disposition) headers['Content-Disposition'] = answer.disposition;
  res.writeHead(answer.status, headers).end(answer.body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
