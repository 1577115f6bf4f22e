import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestAuthority } from '../../support/certificates.js';
import { rawExchange } from '../helpers/raw-http.js';
import { metricValue } from '../helpers/http-read.js';
import { TEST_KEY, eventually, startTestServer, tempDir, testEngine, type TestServer } from '../helpers/server.js';
import { version } from '../helpers/snapshots.js';

/**
 * Every request gets an answer, never a silent close (docs/operations.md,
 * What each build answers), over plain HTTP and TLS alike: a Host that is
 * no authority, two Hosts, requests pipelined on one connection. What the
 * build of uWebSockets.js answers before the service sees a request (no
 * Host, HTTP/1.0, absolute-form, a head over 64 KiB) is asserted as the docs
 * say it, per build; the node engine answers each of them.
 */
interface Ctx {
  dir: string;
  ca: Buffer;
  plain: TestServer;
  secure: TestServer;
}

const test = suite<Ctx>('every request answered');
const engine = testEngine();
const v2057 = engine.name === 'uws' && engine.refusesBadHeads;

test.before(async (ctx) => {
  ctx.dir = tempDir();
  const authority = new TestAuthority(ctx.dir);
  ctx.ca = readFileSync(authority.ca);
  const pair = authority.issue('server');
  // No operator here: /health is the public document, made at once.
  const options = { metricsAllow: ['10.0.0.0/8'] };
  ctx.plain = await startTestServer({ snapshot: version(1), options });
  ctx.secure = await startTestServer({ snapshot: version(1), options: { ...options, tlsCert: pair.cert, tlsKey: pair.key } });
});

test.after(async (ctx) => {
  await ctx.plain.close();
  await ctx.secure.close();
});

/** Both servers: [name, port, tls]. */
const both = (ctx: Ctx) =>
  [
    ['plain', ctx.plain.server.port, undefined],
    ['TLS', ctx.secure.server.port, { ca: ctx.ca }],
  ] as const;

test('a Host that is no authority, and two Hosts: 400 at once, then the connection closes', async (ctx) => {
  for (const [name, port, tls] of both(ctx)) {
    for (const host of ['[::1]evil.com', '[::1].evil.com', 'a b', 'x/y', '[zz::1]']) {
      // The wait bounds a hang: the answer and the close come at once.
      const got = await rawExchange(port, `GET /metrics HTTP/1.1\r\nHost: ${host}\r\n\r\n`, { tls, waitMs: 10_000 });
      assert.equal(got.statuses, [400], `${name}, Host ${host}: ${got.text.slice(0, 120)}`);
      assert.ok(got.closed, `${name}, Host ${host}: then closed`);
    }
    for (const host of ['localhost', '127.0.0.1:80', '[::1]:8080', 'api.example.com', 'xn--e1afmkfd.xn--p1ai']) {
      const got = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, { tls });
      assert.equal(got.statuses, [200], `${name}, Host ${host}`);
    }
    const two = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', { tls, waitMs: 10_000 });
    assert.equal(two.statuses, [400], `${name}: two Hosts`);
  }
});

test('requests pipelined on one connection are answered in order, each of them, 100 times over', async (ctx) => {
  const requests = ['/health', '/openapi.json', `/api?key=${TEST_KEY}&count=3`, '/nope', '/api?key=nope', `/api?key=${TEST_KEY}&type=socks9`];
  const expected = [200, 200, 200, 404, 401, 400];
  const pipeline = requests.map((path) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`).join('') + 'HEAD /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n';
  for (const [name, port, tls] of both(ctx)) {
    let lost = 0;
    for (let i = 0; i < 100; i++) {
      const got = await rawExchange(port, pipeline, { tls });
      if (JSON.stringify(got.statuses) !== JSON.stringify([...expected, 200])) lost++;
    }
    assert.is(lost, 0, `${name}: pipelines with an answer missing or out of order`);
  }
});

test('what the build answers before the service sees the request, as the docs say it', async (ctx) => {
  const heads = {
    'no Host': 'GET /health HTTP/1.1\r\n\r\n',
    'HTTP/1.0': 'GET /health HTTP/1.0\r\n\r\n',
    // The node engine serves it: the client closes after it, as with the others.
    'absolute-form': 'GET http://localhost/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    'a head over 64 KiB': `GET /health HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'x'.repeat(70_000)}\r\n\r\n`,
  };
  // v20.57 answers each at once; v20.30 never answers them (the balancer's edge does: docs/several-instances.md); the node engine serves HTTP/1.0 and absolute-form.
  const status = { 'no Host': 400, 'HTTP/1.0': 505, 'absolute-form': 505, 'a head over 64 KiB': 431 } as const;
  const onNode = { 'no Host': 400, 'HTTP/1.0': 200, 'absolute-form': 200, 'a head over 64 KiB': 431 } as const;
  for (const [name, port, tls] of both(ctx)) {
    for (const [what, head] of Object.entries(heads) as Array<[keyof typeof heads, string]>) {
      // v20.57 answers and closes at once (the wait bounds a hang); v20.30's silence is seen within a wait shorter than its idle close.
      const got = await rawExchange(port, head, { tls, waitMs: engine.name === 'node' || v2057 ? 10_000 : 2100 });
      if (engine.name === 'node') {
        assert.equal(got.statuses, [onNode[what]], `${name}, ${what}`);
        assert.ok(got.closed, `${name}, ${what}: then closed`);
        if (onNode[what] !== 200) assert.match(got.text, /\r\n\r\nError: [^\r\n]+$/, `${name}, ${what}: a one-line error`);
      } else if (v2057) {
        assert.equal(got.statuses, [status[what]], `${name}, ${what}`);
      } else if (what === 'a head over 64 KiB') {
        // v20.30 serves a big head that arrives in one read, and closes at once on one that comes in pieces.
        assert.ok(got.statuses.length === 0 ? got.closed && got.firstByteMs === null : got.statuses[0] === 200, `${name}, ${what}: ${got.statuses}`);
      } else {
        assert.equal(got.statuses, [], `${name}, ${what}: v20.30 answers nothing (docs/operations.md, What each build answers)`);
      }
    }
  }
});

/** A query held for a second (`wait=1` with its own ETag), and the head of a request for it. */
async function heldRequest(t: TestServer): Promise<string> {
  const query = `/api?key=${TEST_KEY}&count=3&wait=1`;
  const etag = (await t.get(query)).headers.get('etag')!;
  return `GET ${query} HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: ${etag}\r\n\r\n`;
}

/** A head of `lines` header lines (Host among them), far under 64 KiB. */
const manyLines = (lines: number): string => `GET /health HTTP/1.1\r\nHost: localhost\r\n${'X-A: b\r\n'.repeat(lines - 1)}\r\n`;

test('CONNECT, an Expect other than 100-continue, a head of over 1,000 lines: a status with the one-line error, then a close (the builds of uWebSockets.js as the docs say)', async (ctx) => {
  const node = engine.name === 'node';
  for (const [name, port, tls] of both(ctx)) {
    const wait = { tls, waitMs: node || v2057 ? 10_000 : 2100 };
    const connect = await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', wait);
    // v20.57 takes an authority-form target for another version of HTTP; v20.30 answers nothing (docs/operations.md).
    assert.equal(connect.statuses, node ? [405] : v2057 ? [505] : [], `${name}, CONNECT: ${connect.text.slice(0, 80)}`);
    if (node) {
      assert.ok(connect.closed && /\r\nAllow: GET, HEAD\r\n/.test(connect.text), `${name}, CONNECT: Allow, then closed`);
      assert.match(connect.text, /\r\n\r\nError: Method not allowed$/);
    }
    const expect = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\nExpect: the-moon\r\n\r\n', { tls, waitMs: 10_000 });
    assert.equal(expect.statuses, [417], `${name}, Expect: ${expect.text.slice(0, 80)}`);
    assert.ok(expect.closed, `${name}, Expect: then closed`);
    assert.match(expect.text, /\r\n\r\nError: Expectation failed: [^\r\n]+$/);
    const proceed = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n', { tls });
    assert.is(proceed.statuses.at(-1), 200, `${name}, Expect: 100-continue is served`);
    // v20.30 takes at most 48 lines and answers nothing past them, v20.57 98 and answers its own 431 (docs/operations.md).
    const most = node ? 1000 : v2057 ? 98 : 48;
    assert.equal((await rawExchange(port, manyLines(most).replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n').replace('X-A: b\r\n', ''), { tls })).statuses, [200], `${name}, ${most} lines`);
    const over = await rawExchange(port, manyLines(1001), wait);
    assert.equal(over.statuses, node || v2057 ? [431] : [], `${name}, 1,001 lines: ${over.text.slice(0, 80)}`);
    if (node) assert.match(over.text, /\r\n\r\nError: Request head has too many lines: at most 1,000 header lines$/);
  }
});

test('behind an answer that comes later: the node engine answers every request in order, a malformed one last with its 400; uWebSockets.js closes (as the docs say)', async (ctx) => {
  for (const [name, port, tls] of both(ctx)) {
    const held = await heldRequest(ctx.plain);
    const malformed = 'GET /health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n';
    const answeredAtOnce = `GET /api?key=${TEST_KEY}&count=1 HTTP/1.1\r\nHost: localhost\r\n\r\n` + 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(10);
    const got = await rawExchange(port, held + answeredAtOnce + malformed, { tls, waitMs: 10_000 });
    if (engine.name === 'node') {
      assert.equal(got.statuses, [304, 200, ...Array(10).fill(200), 400], `${name}: ${got.text.slice(0, 200)}`);
      // Without one held first: the answers Node still holds go out before the 400.
      const atOnce = await rawExchange(port, answeredAtOnce + malformed, { tls, waitMs: 10_000 });
      assert.equal(atOnce.statuses, [200, ...Array(10).fill(200), 400], `${name}, none held`);
      assert.ok(got.closed, `${name}: closed after the 400`);
    } else {
      assert.equal(got.statuses, [], `${name}: uWebSockets.js closes a connection that pipelines behind an answer to come`);
      assert.ok(got.closed, name);
    }
  }
});

test('a client that half-closes after its request still gets an answer that comes later (node engine; uWebSockets.js closes, as the docs say)', async (ctx) => {
  for (const [name, port, tls] of both(ctx)) {
    const got = await rawExchange(port, await heldRequest(ctx.plain), { tls, waitMs: 10_000, halfClose: true });
    // The node engine sends 100 (Continue) lines first (up to four in 250 ms), which tell a client that has gone from one that reads on.
    if (engine.name === 'node') {
      assert.is(got.statuses.at(-1), 304, `${name}: ${got.text.slice(0, 120)}`);
      assert.equal(new Set(got.statuses.slice(0, -1)), new Set([100]), `${name}: ${got.statuses}`);
    } else {
      assert.equal(got.statuses, [], name);
    }
    const list = await rawExchange(port, `GET /api?key=${TEST_KEY} HTTP/1.1\r\nHost: localhost\r\n\r\n`, { tls, waitMs: 10_000, halfClose: true });
    if (engine.name === 'node') assert.equal(list.statuses, [200], `${name}: a whole list`);
  }
});

/** A head of about `kb` KB: over 64 KiB, so refused with 431. */
const bigHead = (kb: number): Buffer => Buffer.from(`GET /health HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'x'.repeat(kb * 1024)}\r\n\r\n`);

test('the node engine: a 431 to a head of 70 KB, 100 KB and 1 MB reaches a client still sending it, plain and TLS (a lingering close), 20 times each', async (ctx) => {
  if (engine.name !== 'node') return;
  for (const [name, port, tls] of both(ctx)) {
    for (const kb of [70, 100, 1024]) {
      const head = bigHead(kb);
      for (let i = 0; i < 20; i++) {
        const got = await rawExchange(port, head, { tls, waitMs: 10_000 });
        assert.equal(got.statuses, [431], `${name}, ${kb} KB, try ${i}: ${got.text.slice(0, 60)}`);
        assert.ok(got.closed, `${name}, ${kb} KB: closed after the 431`);
      }
    }
  }
});

/** Writes a head over 64 KiB, then up to 64 MB more as fast as the socket takes it: the bytes written when the connection closed. */
function flood(port: number, tls: { ca: Buffer } | undefined): Promise<number> {
  return new Promise<number>((resolve) => {
    const socket = tls ? tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: tls.ca }) : connect({ host: '127.0.0.1', port });
    const chunk = Buffer.alloc(256 * 1024, 120);
    let bytes = 0;
    const pump = (): void => {
      while (bytes < 64 * 1024 * 1024 && socket.writable) {
        bytes += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      socket.write(bigHead(70));
      pump();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(bytes));
  });
}

test('the node engine: a client that goes on sending after its 431 is cut off once it sent 4 MB more; /metrics counts how lingering closes end', async (ctx) => {
  if (engine.name !== 'node') return;
  for (const [name, port, tls] of both(ctx)) {
    const sent = await flood(port, tls);
    assert.ok(sent < 32 * 1024 * 1024, `${name}: cut off after ${sent} bytes`);
  }
  const t = await startTestServer({ snapshot: version(1) });
  try {
    const count = async (end: string) => metricValue(await (await t.get('/metrics')).text(), `proxylist_lingering_closes_total{end="${end}"}`);
    assert.equal([await count('client'), await count('bytes')], [0, 0]);
    assert.equal((await rawExchange(t.server.port, bigHead(100), { waitMs: 10_000 })).statuses, [431]);
    await flood(t.server.port, undefined);
    await eventually(async () => (await count('client')) === 1 && (await count('bytes')) === 1, 5000, 'one lingering close ended by the client, one by the bytes bound');
  } finally {
    await t.close();
  }
});

test.run();
