import { readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/core/log.js';
import { head } from '../../src/http/head.js';
import { Sender } from '../../src/http/sender.js';
import type { ListenSocket, Route, Routes, Serve } from '../../src/http/engine.js';
import { nodeEngine } from '../../src/http/node/node-engine.js';
import { checkReadStop } from '../../src/http/node/read-stop.js';
import { TestAuthority } from '../../support/certificates.js';
import { RawConnection } from '../helpers/raw-http.js';
import { TEST_KEY, startTestServer, tempDir, testEngine, type TestServer } from '../helpers/server.js';
import { version } from '../helpers/snapshots.js';

/**
 * The node engine on Node's documented API (docs/operations.md, Where it
 * runs): the one private mechanism it uses, stopping the reading of a
 * pipelining client, works here (the check at start says so, and a held
 * request with 5,000 pipelined behind it gets every answer in order on a
 * connection that stays); its heads carry no Connection line, as
 * uWebSockets.js's; and its own timeouts close silent, slow, idle and
 * handshaking connections at 10 s while accepting is paused and after a
 * new listen and a renewed certificate.
 */
interface Ctx {
  t: TestServer;
}
const test = suite<Ctx>('the node engine');

test.before(async (ctx) => {
  ctx.t = await startTestServer({ snapshot: version(1, 2000), options: { engine: 'node', threads: 1 } });
});
test.after(async (ctx) => {
  await ctx.t.close();
});

test('the check at start finds that reading a connection can be stopped, and that heads need no Connection line', async () => {
  const check = await checkReadStop();
  assert.ok(check.stops, `reading cannot be stopped on Node ${process.versions.node}: the engine would close pipelining clients`);
  assert.ok(check.omitsConnection, `Node ${process.versions.node} adds a Connection line`);
});

test('an HTTP/1.1 answer has no Connection or Keep-Alive line', async (ctx) => {
  const c = await RawConnection.open(ctx.t.server.port);
  try {
    const r = await c.request(`/api?key=${TEST_KEY}&count=1`);
    assert.is(r.status, 200);
    assert.not.ok(r.lines.some((l) => /^(connection|keep-alive):/i.test(l)), r.lines.join(' | '));
  } finally {
    c.close();
  }
});

/** The answers in `bytes`, in order, framed by their Content-Length: status and body. */
function answers(bytes: Buffer): Array<{ status: string; body: string }> {
  const out: Array<{ status: string; body: string }> = [];
  for (let at = 0; ;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return out;
    const headText = bytes.subarray(at, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headText)?.[1] ?? 0);
    if (end + 4 + length > bytes.length) return out;
    out.push({ status: headText.slice(9, 12), body: bytes.subarray(end + 4, end + 4 + length).toString('latin1') });
    at = end + 4 + length;
  }
}

test('a held wait with 5,000 requests pipelined behind it in one write: every answer, in order, on the same connection', async (ctx) => {
  const port = ctx.t.server.port;
  const query = `/api?key=${TEST_KEY}&count=1&type=socks5`;
  const etag = (await ctx.t.get(query)).headers.get('etag')!;
  const held = `GET ${query}&wait=2 HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\n\r\n`;
  // Each request asks for another page of one proxy: its answer says which one it is.
  const target = (i: number): string => `/api?key=${TEST_KEY}&count=1&offset=${i % 50}`;
  const expected = await Promise.all(Array.from({ length: 50 }, async (_, i) => (await ctx.t.get(target(i))).text()));
  let text = held;
  for (let i = 0; i < 5000; i++) text += `GET ${target(i)} HTTP/1.1\r\nHost: x\r\n\r\n`;
  const socket = connect({ port, host: '127.0.0.1' });
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  socket.write(text);
  let got: Array<{ status: string; body: string }> = [];
  const until = Date.now() + 20_000;
  while (got.length < 5001 && !closed && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    got = answers(Buffer.concat(chunks));
  }
  socket.destroy();
  assert.not.ok(closed, `the connection was closed after ${got.length} answers`);
  assert.is(got.length, 5001);
  // The held one first (304 once its wait ends), then the rest in the order they were sent.
  assert.is(got[0].status, '304');
  for (let i = 0; i < 5000; i++) assert.ok(got[i + 1].status === '200' && got[i + 1].body === expected[i % 50], `answer ${i + 1} is not the one asked for`);
});

/** Minimal routes for the engine alone: every path answers 200 at once, through the sender of every answer. */
function routes(): Routes {
  const ok = head('200 OK', [['Content-Type', 'text/plain']]);
  const body = Buffer.from('ok');
  const sender = new Sender(createLogger('silent'));
  const serve: Serve = (ex) => sender.bytes(ex, ok, body);
  const route: Route = { path: '/', account: { answered: () => undefined }, get: serve, head: serve, other: serve };
  return { paths: [route], other: route, refused: () => ({ head: ok, body }), lingered: () => undefined, socketFailed: () => undefined };
}

/** When the server closed each connection, in s after it was opened: one silent, one with a head that never ends, one idle after an answer, one whose body never ends, and one TLS client that never finishes its handshake. */
async function closings(port: number, tlsPort: number): Promise<Record<string, number>> {
  const opened = (p: number): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect({ port: p, host: '127.0.0.1' }, () => resolve(s));
      s.once('error', reject);
    });
  const watch = async (name: string, p: number, start: (s: Socket) => void): Promise<[string, number]> => {
    const s = await opened(p);
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    const from = performance.now();
    start(s);
    await new Promise((r) => s.once('close', r));
    return [name, (performance.now() - from) / 1000];
  };
  let drip: NodeJS.Timeout | undefined;
  let trickle: NodeJS.Timeout | undefined;
  const all = await Promise.all([
    watch('silent', port, () => undefined),
    watch('slow head', port, (s) => {
      s.write('GET / HTTP/1.1\r\nHost: x\r\n');
      drip = setInterval(() => s.writable && s.write('X-A: b\r\n'), 1000);
    }),
    watch('idle keep-alive', port, (s) => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')),
    watch('slow body', port, (s) => {
      s.write('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
      trickle = setInterval(() => s.writable && s.write('a'), 1000);
    }),
    watch('TLS handshake', tlsPort, (s) => s.write(Buffer.from([0x16, 0x03, 0x01]))),
  ]);
  clearInterval(drip);
  clearInterval(trickle);
  return Object.fromEntries(all);
}

/** Each connection closed at 10 s (within the sweep's half second and some slack), or, those named in `sooner`, earlier. */
function assertAtTen(times: Record<string, number>, when: string, sooner: string[] = []): void {
  console.log(`  ${when}: closed after ${Object.entries(times).map(([name, s]) => `${name} ${s.toFixed(2)} s`).join(', ')}`);
  for (const [name, s] of Object.entries(times)) assert.ok((s >= 9.5 || sooner.includes(name)) && s <= 11.5, `${when}: the ${name} connection closed after ${s.toFixed(2)} s, not 10 s`);
}

if (testEngine().name === 'node') {
  test('the timeouts close silent, slow, idle and handshaking connections at 10 s while accepting is paused, and after a new listen and a renewal', async () => {
    const dir = tempDir();
    const authority = new TestAuthority(dir);
    const first = authority.issue('first');
    const second = authority.issue('second');
    const pair = (p: { cert: string; key: string }) => ({ cert: readFileSync(p.cert), key: readFileSync(p.key) });
    const engine = nodeEngine();
    const plain = engine.app(routes(), null);
    const secure = engine.app(routes(), pair(first));
    let tokens: ListenSocket[] = [];
    try {
      tokens = [(await plain.listen('127.0.0.1', 0, true))!, (await secure.listen('127.0.0.1', 0, true))!];
      const [port, tlsPort] = tokens.map((t) => t.port);
      // Accepting paused as the listener pauses it: the connections are open, the servers no longer listen.
      const paused = closings(port, tlsPort);
      await new Promise((r) => setTimeout(r, 300));
      for (const t of tokens) t.close();
      // Node's server.close() closes idle connections at once (Node 19 and later; Node 26 counts one that sent nothing as idle too).
      assertAtTen(await paused, 'while accepting is paused', ['idle keep-alive', 'silent']);
      tokens = [(await plain.listen('127.0.0.1', port, true))!, (await secure.listen('127.0.0.1', tlsPort, true))!];
      secure.renew!(pair(second));
      assertAtTen(await closings(port, tlsPort), 'after a new listen and a renewal');
    } finally {
      for (const t of tokens) t.close();
      plain.close();
      secure.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test.run();
