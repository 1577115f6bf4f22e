import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestAuthority } from '../../support/certificates.js';
import { rawExchange } from '../helpers/raw-http.js';
import { TEST_KEY, startTestServer, tempDir, testEngine, type TestServer } from '../helpers/server.js';
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
    'absolute-form': 'GET http://localhost/health HTTP/1.1\r\nHost: localhost\r\n\r\n',
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
        if (what !== 'absolute-form') assert.ok(got.closed, `${name}, ${what}: then closed`);
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

test.run();
