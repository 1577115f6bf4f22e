import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { head } from '../../src/http/head.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, startTestServer, testEngine, type TestServer } from '../helpers/server.js';

/** Response heads written as one block of lines (src/http/head.ts). */
const unit = suite('head');

unit('the status, then one line per header, in order, then nosniff, without the final line break', () => {
  const h = head('200 OK', [['Content-Type', 'text/plain'], ['ETag', 'W/"x"']]);
  assert.is(h.status, '200 OK');
  assert.is(Buffer.from(h.bytes).toString(), '200 OK\r\nContent-Type: text/plain\r\nETag: W/"x"\r\nX-Content-Type-Options: nosniff');
});

unit('a line break in a name or value is refused, never sent', () => {
  assert.throws(() => head('200 OK', [['X-A', 'b\r\nX-Injected: 1']]), /line break/);
  assert.throws(() => head('200 OK', [['X-A\n', 'b']]), /line break/);
});

unit.run();

const wire = suite<{ t: TestServer; port: number }>('heads on the wire');
wire.before(async (ctx) => {
  const snapshot = encodeSnapshot(generateRecords({ records: 2000, seed: 5, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.t = await startTestServer({
    snapshot,
    keys: { keys: [{ key: TEST_KEY, limits: UNLIMITED }, { key: 'one-a-window', limits: { per_window: 1, daily: 100, subnets: null } }] },
  });
  ctx.port = Number(new URL(ctx.t.base).port);
});
wire.after((ctx) => ctx.t?.close());

/** The head's lines of the answer to one raw request, on a connection of its own. */
function headOf(port: number, request: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(request));
    let got = '';
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.destroy();
      resolve(got.slice(0, end).split('\r\n'));
    });
    socket.on('error', reject);
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error('no head within 5 s'));
    });
  });
}

/** uWebSockets.js marks each answer with a line of its own after the Date; the node engine writes none. */
const MARK = testEngine().name === 'uws' ? ['uwebsockets'] : [];

/** The names of the head's header lines, in order, lower case; each line must be `Name: value`. */
function names(r: RawResponse): string[] {
  return r.lines.slice(1).map((line) => {
    assert.match(line, /^[A-Za-z-]+: \S/, `a header line: ${JSON.stringify(line)}`);
    return line.slice(0, line.indexOf(':')).toLowerCase();
  });
}

wire('a whole list: every header once, the service\'s lines then the server\'s, the same again from memory', async ({ port }) => {
  const c = await RawConnection.open(port);
  try {
    const first = await c.request(`/api?key=${TEST_KEY}&type=http`);
    const again = await c.request(`/api?key=${TEST_KEY}&type=http`);
    assert.is(first.lines[0], 'HTTP/1.1 200 OK');
    const expected = ['content-type', 'cache-control', 'vary', 'etag', 'snapshot-generated-at', 'list-cursor', 'x-content-type-options', 'date', ...MARK, 'content-length'];
    assert.equal(names(first), expected);
    assert.equal(names(again), expected);
    const noDate = (r: RawResponse) => r.lines.filter((l) => !l.startsWith('Date:'));
    assert.equal(noDate(again), noDate(first), 'the remembered head is the one made the first time');
    assert.is(Number(first.headers.get('content-length')), first.body.length);
  } finally {
    c.close();
  }
});

wire('a 304, and the head of another query, on one connection: each its own', async ({ port }) => {
  const c = await RawConnection.open(port);
  try {
    const json = await c.request(`/api?key=${TEST_KEY}&get=json&count=3`);
    assert.is(json.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.not.ok(json.headers.has('list-cursor'), 'a counted list has no cursor');
    const etag = json.headers.get('etag')!;
    const lines = await headOf(port, `GET /api?key=${TEST_KEY}&get=json&count=3 HTTP/1.1\r\nHost: test\r\nIf-None-Match: ${etag}\r\n\r\n`);
    assert.is(lines[0], 'HTTP/1.1 304 Not Modified');
    assert.ok(lines.includes(`ETag: ${etag}`));
    assert.ok(lines.includes('X-Content-Type-Options: nosniff'));
    assert.not.ok(lines.some((l) => /^content-length:/i.test(l)), 'a 304 announces no length');
    const txt = await c.request(`/api?key=${TEST_KEY}&count=3`);
    assert.is(txt.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.is.not(txt.headers.get('etag'), etag);
  } finally {
    c.close();
  }
});

wire('errors: the catalogue\'s lines, Retry-After and the RateLimit fields of a limited key', async ({ port }) => {
  const c = await RawConnection.open(port);
  try {
    const missing = await c.request('/api?type=http');
    assert.is(missing.lines[0], 'HTTP/1.1 401 Unauthorized');
    assert.equal(names(missing), ['content-type', 'cache-control', 'x-content-type-options', 'date', ...MARK, 'content-length']);
    assert.is(missing.body.toString(), 'Error: Access key not provided');
    const ok = await c.request('/api?key=one-a-window&count=1');
    assert.is(ok.lines[0], 'HTTP/1.1 200 OK');
    assert.ok(names(ok).includes('ratelimit-policy') && names(ok).includes('ratelimit'));
    const refused = await c.request('/api?key=one-a-window&count=1');
    assert.is(refused.lines[0], 'HTTP/1.1 429 Too Many Requests');
    const n = names(refused);
    assert.equal(n.slice(0, 3), ['content-type', 'cache-control', 'retry-after']);
    assert.is(new Set(n).size, n.length, 'no header twice');
  } finally {
    c.close();
  }
});

wire.run();
