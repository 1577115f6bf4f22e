import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { uwsUnavailable } from '../../src/http/uws/load.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { randomQueries } from '../helpers/random-queries.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The same service on both engines (docs/operations.md, Where it runs): a
 * server on uWebSockets.js and one on Node's http module, from the same
 * snapshot and keys at the same frozen time, give the same status line,
 * header lines and body bytes to the same requests. The Date's value and
 * the line uWebSockets.js marks its answers with are set aside. Where no
 * build of uWebSockets.js loads (Node 26) there is nothing to compare
 * with, and the suite has no test.
 */
const records = generateRecords({ records: 3000, seed: 11, now: TEST_NOW_S });
const snapshot = encodeSnapshot(records, TEST_NOW_S);
const keys = { keys: [{ key: TEST_KEY, limits: UNLIMITED }, { key: 'two-a-window', limits: { per_window: 2, daily: 100, subnets: null } }] };

/** The head's lines without the Date's value and uWebSockets.js's mark. */
const comparable = (r: RawResponse): string[] => r.lines.filter((l) => !l.startsWith('uWebSockets:')).map((l) => (l.startsWith('Date: ') ? 'Date: *' : l));

interface Ctx {
  servers: TestServer[];
}
const test = suite<Ctx>('the same service on both engines');

test.before(async (ctx) => {
  // /health as anyone reads it (the whole one names each server's own files): no address may read it whole.
  const options = { metricsAllow: ['10.0.0.0/8'], threads: 1 };
  ctx.servers = [];
  for (const engine of ['uws', 'node'] as const) ctx.servers.push(await startTestServer({ snapshot, keys, options: { ...options, engine } }));
});

test.after(async (ctx) => {
  for (const s of ctx.servers) await s.close();
});

/** Sends the same request to both servers, and asserts the same answer; returns it. */
async function same(connections: RawConnection[], target: string, method = 'GET', headers = ''): Promise<RawResponse> {
  const [a, b] = await Promise.all(connections.map((c) => c.request(target, method, 5000, headers)));
  const what = `${method} ${target.slice(0, 200)} ${JSON.stringify(headers)}`;
  assert.equal(comparable(b), comparable(a), `the head of ${what}`);
  assert.ok(b.body.equals(a.body), `the body of ${what}: ${b.body.length} and ${a.body.length} bytes`);
  return a;
}

const open = (ctx: Ctx): Promise<RawConnection[]> => Promise.all(ctx.servers.map((s) => RawConnection.open(s.server.port)));

if (uwsUnavailable() === null) {
  test('generated queries, plain and compressed, GET and HEAD: the same bytes', async (ctx) => {
    const connections = await open(ctx);
    try {
      for (const q of randomQueries(records, 300, 5)) {
        const target = `/api?key=${TEST_KEY}&${q}`;
        const got = await same(connections, target);
        await same(connections, target, 'HEAD');
        await same(connections, target, 'GET', 'Accept-Encoding: gzip, br\r\n');
        const etag = got.headers.get('etag');
        if (etag) await same(connections, target, 'GET', `If-None-Match: ${etag}\r\n`);
      }
    } finally {
      for (const c of connections) c.close();
    }
  });

  test('errors, pages, the OpenAPI document, /health and the operator endpoints: the same bytes', async (ctx) => {
    const connections = await open(ctx);
    try {
      const targets = [
        '/api', '/api?key=nope', '/api?key=%ZZ', `/api?key=${TEST_KEY}&key=x`, `/api?key=${TEST_KEY}&type=socks9`, `/api?key=${TEST_KEY}&_=${'a'.repeat(9000)}`,
        '/nope', '/api/', '/health', '/metrics', '/usage', '/openapi.json', '/', '/docs',
      ];
      for (const target of targets) {
        await same(connections, target);
        await same(connections, target, 'HEAD');
        await same(connections, target, 'GET', 'Accept-Encoding: br\r\n');
      }
      await same(connections, '/api', 'POST', 'Content-Length: 0\r\n');
      await same(connections, '/', 'DELETE', 'Content-Length: 0\r\n');
      // A limited key: its RateLimit fields, then the refusal with its Retry-After.
      for (let i = 0; i < 3; i++) await same(connections, '/api?key=two-a-window&count=1');
    } finally {
      for (const c of connections) c.close();
    }
  });

  test('a change set since a cursor: the same bytes', async (ctx) => {
    const connections = await open(ctx);
    try {
      const first = await same(connections, `/api?key=${TEST_KEY}&type=http`);
      const cursor = first.headers.get('list-cursor');
      assert.ok(cursor, 'a list cursor');
      await same(connections, `/api?key=${TEST_KEY}&type=http&since=${encodeURIComponent(cursor!)}`);
    } finally {
      for (const c of connections) c.close();
    }
  });
}

test.run();
