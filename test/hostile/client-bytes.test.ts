import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { costlyRequests } from '../../support/hostile-clients.js';
import { freePorts } from '../../support/ports.js';
import { exitWithin, runCli, type Child } from '../helpers/cli.js';
import { UNLIMITED, eventually, tempDir } from '../helpers/server.js';

/**
 * Nothing a client sends ends the service (docs/operations.md, Hostile
 * clients): each class of hostile bytes, sent 20 connections at a time and
 * ended by a TCP reset at several moments, over plain HTTP and TLS, on the
 * engine and threads the suite runs with; then the same process answers
 * /health. And no request holds a serving thread: while one connection
 * sends the costliest heads and query strings the service accepts,
 * /health from another is answered within 500 ms.
 */
interface Server {
  port: number;
  child: Child;
  ca: Buffer | null;
}
interface Ctx {
  dir: string;
  plain: Server;
  secure: Server;
  etag: string;
}

const KEY = 'k';
const HOST = 'Host: localhost\r\n';
/** Every proxy: a list of some megabytes, written while the reset comes. */
const BIG = `/api?key=${KEY}&get=json&time=100000000`;

/** The classes of hostile bytes: what a client writes before it resets. */
function classes(etag: string): Array<[string, string | Buffer]> {
  const api = (q: string, headers = ''): string => `GET /api?key=${KEY}&${q} HTTP/1.1\r\n${HOST}${headers}\r\n`;
  return [
    ['CONNECT', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`],
    ['CONNECT with bytes after it', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03`],
    ['a websocket upgrade', `GET /api?key=${KEY} HTTP/1.1\r\n${HOST}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58`],
    ['an h2c upgrade', `GET /health HTTP/1.1\r\n${HOST}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`],
    ['the HTTP/2 preface', Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])])],
    ['a malformed request line', 'GET\x00/ HTTP/1.1\r\n\r\n'],
    ['a method no route has', `BREW /api HTTP/1.1\r\n${HOST}\r\n`],
    ['a head cut short', `GET /api?key=${KEY} HTTP/1.1\r\n${HOST}X-Cut: `],
    ['a request line cut short', 'GET /api?ke'],
    ['pipelined requests', api('count=1').repeat(200)],
    ['a request then a malformed one', api('count=1') + 'GET /\x01 HTTP/1.1\r\n\r\n'],
    ['two Content-Length lines that disagree', `GET /api?key=${KEY} HTTP/1.1\r\n${HOST}Content-Length: 0\r\nContent-Length: 44\r\n\r\n${api('count=1')}`],
    ['a body sent with a GET', `GET /api?key=${KEY}&count=1 HTTP/1.1\r\n${HOST}Content-Length: 100000\r\n\r\n${'x'.repeat(1000)}`],
    ['Transfer-Encoding chunked, cut', `GET /api?key=${KEY}&count=1 HTTP/1.1\r\n${HOST}Transfer-Encoding: chunked\r\n\r\nfffff\r\nabc`],
    ['Expect: 100-continue and no body', `GET /api?key=${KEY}&count=1 HTTP/1.1\r\n${HOST}Expect: 100-continue\r\nContent-Length: 10\r\n\r\n`],
    ['an Expect the service cannot meet', `GET /health HTTP/1.1\r\n${HOST}Expect: bacon\r\n\r\n`],
    ['a head over 64 KiB, lingering', `GET /health HTTP/1.1\r\n${HOST}X-Big: ${'a'.repeat(100 * 1024)}\r\n\r\n`],
    ['over 1,000 header lines', `GET /health HTTP/1.1\r\n${HOST}${'X-A: b\r\n'.repeat(1100)}\r\n`],
    ['HTTP/1.0', `GET /api?key=${KEY}&count=1 HTTP/1.0\r\n\r\n`],
    ['an absolute-form target', `GET http://localhost/api?key=${KEY}&count=1 HTTP/1.1\r\n${HOST}\r\n`],
    ['a big body being written', `GET ${BIG} HTTP/1.1\r\n${HOST}\r\n`],
    ['a big body being compressed (br)', `GET ${BIG}&count=5000 HTTP/1.1\r\n${HOST}Accept-Encoding: br\r\n\r\n`],
    ['a big body being compressed (gzip)', `GET ${BIG}&count=6000 HTTP/1.1\r\n${HOST}Accept-Encoding: gzip\r\n\r\n`],
    ['a held wait', api('count=1&wait=30', `If-None-Match: ${etag}\r\n`)],
    ['a held wait with requests pipelined behind it', api('count=1&wait=30', `If-None-Match: ${etag}\r\n`) + api('count=2').repeat(100)],
  ];
}

/** When the client resets: at once after its bytes, a moment later, or once the first byte of an answer came. */
const MOMENTS = ['at once', 'after 5 ms', 'after 50 ms', 'at the first byte back'] as const;
type Moment = (typeof MOMENTS)[number];

/**
 * One connection that writes `bytes` and then resets (SO_LINGER 0). Over
 * TLS the reset is the TCP socket's under the TLS one; `duringHandshake`
 * resets it before the handshake ends.
 */
function sendAndReset(port: number, bytes: string | Buffer, moment: Moment, ca: Buffer | null, duringHandshake = false, localAddress?: string): Promise<void> {
  return new Promise((resolve) => {
    const raw = connect({ host: '127.0.0.1', port, localAddress });
    let done = false;
    const reset = (): void => {
      if (done) return;
      done = true;
      clearTimeout(backstop);
      if (!raw.destroyed) raw.resetAndDestroy();
      resolve();
    };
    // A moment that never comes (no answer) still ends in a reset.
    const backstop = setTimeout(reset, 250);
    raw.on('error', reset);
    const after = (s: Socket): void => {
      s.write(bytes);
      if (moment === 'at once') reset();
      else if (moment === 'after 5 ms') setTimeout(reset, 5);
      else if (moment === 'after 50 ms') setTimeout(reset, 50);
      else s.once('data', reset);
    };
    raw.once('connect', () => {
      if (ca === null) return after(raw);
      const secure = tlsConnect({ socket: raw, servername: 'localhost', ca });
      secure.on('error', reset);
      if (duringHandshake) setImmediate(reset);
      else secure.once('secureConnect', () => after(secure));
    });
  });
}

/** /health's status and how long it took, over TLS where the server has it. */
function health(s: Server): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const took = (status: number) => ({ status, ms: performance.now() - started });
  if (s.ca === null) return fetch(`http://127.0.0.1:${s.port}/health`).then((r) => r.arrayBuffer().then(() => took(r.status)), () => took(0));
  return new Promise((resolve) => {
    const req = httpsRequest({ host: '127.0.0.1', port: s.port, path: '/health', servername: 'localhost', ca: s.ca!, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(took(res.statusCode ?? 0)));
    });
    req.on('error', () => resolve(took(0)));
    req.end();
  });
}

async function start(name: string, snapshot: string, keys: string, port: number, tls: { cert: string; key: string; ca: Buffer } | null): Promise<Server> {
  const args = ['serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--drain-s', '0', '--trust-proxy', '127.0.0.1'];
  if (tls) args.push('--tls-cert', tls.cert, '--tls-key', tls.key);
  const child = runCli(args);
  const s: Server = { port, child, ca: tls?.ca ?? null };
  await eventually(async () => (await health(s)).status === 200, 30_000, `${name} ready`);
  return s;
}

const test = suite<Ctx>('what clients send');

test.before(async (ctx) => {
  ctx.dir = tempDir();
  const authority = new TestAuthority(ctx.dir);
  const pair = authority.issue('server');
  const snapshot = join(ctx.dir, 'snapshot.msgpack');
  const keys = join(ctx.dir, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 20_000, seed: 55, now }), now));
  writeFileSync(keys, JSON.stringify({ keys: [{ key: KEY, limits: UNLIMITED }] }));
  const [plainPort, securePort] = await freePorts(2);
  ctx.plain = await start('plain', snapshot, keys, plainPort, null);
  ctx.secure = await start('TLS', snapshot, keys, securePort, { ...pair, ca: readFileSync(authority.ca) });
  const r = await fetch(`http://127.0.0.1:${plainPort}/api?key=${KEY}&count=1`);
  ctx.etag = r.headers.get('etag')!;
  await r.arrayBuffer();
});

test.after(async (ctx) => {
  await Promise.all([ctx.plain, ctx.secure].map(async (s) => {
    if (!s) return;
    s.child.proc.kill('SIGTERM');
    await exitWithin(s.child, 15_000).catch(() => null);
  }));
  rmSync(ctx.dir, { recursive: true, force: true });
});

/** The process is the one started, and answers /health. */
async function stillServes(s: Server, what: string): Promise<void> {
  assert.is(s.child.proc.exitCode, null, `${what}: the process ended; stderr: ${s.child.stderr().slice(-2000)}`);
  const h = await health(s);
  assert.is(h.status, 200, `${what}: /health answered ${h.status}`);
  assert.not.match(s.child.stdout(), /"event":"(?:uncaught_exception|thread_died|handler_error)"/, `${what}: ${s.child.stdout().split('\n').find((l) => /uncaught_exception|thread_died|handler_error/.test(l))}`);
}

test('each class of hostile bytes, reset at each moment, 20 connections at a time: the same process serves', async (ctx) => {
  // The two servers are processes of their own: each gets its classes at the same time as the other.
  const each = async (name: string, s: Server): Promise<void> => {
    for (const [what, bytes] of classes(ctx.etag)) {
      for (const moment of MOMENTS) {
        await Promise.all(Array.from({ length: 20 }, () => sendAndReset(s.port, bytes, moment, s.ca)));
      }
      await stillServes(s, `${name}, ${what}`);
    }
  };
  await Promise.all([each('plain', ctx.plain), each('TLS', ctx.secure)]);
  await Promise.all(Array.from({ length: 20 }, () => sendAndReset(ctx.secure.port, '', 'at once', ctx.secure.ca, true)));
  await stillServes(ctx.secure, 'TLS, a reset during the handshake');
});

test('while one connection sends the costliest heads and query strings, /health is answered within 500 ms', async (ctx) => {
  for (const [name, s] of [['plain', ctx.plain], ['TLS', ctx.secure]] as const) {
    for (const [what, bytes] of costlyRequests(KEY)) {
      let sending = true;
      // One client writes the request again and again, a new connection each time (most of them close after a refusal), from an
      // address of its own: on uWebSockets.js, requests from the address of one with invalid framing get its 400 for the rest of
      // that turn of the event loop (docs/operations.md, What each build answers).
      const attacker = (async () => {
        while (sending) await sendAndReset(s.port, bytes, 'at the first byte back', s.ca, false, '127.0.0.2');
      })();
      let worst = 0;
      let status = 200;
      const until = performance.now() + 400;
      try {
        while (performance.now() < until && status === 200) {
          const h = await health(s);
          status = h.status;
          worst = Math.max(worst, h.ms);
        }
      } finally {
        sending = false;
        await attacker;
      }
      assert.is(status, 200, `${name}, ${what}: /health answered ${status}`);
      assert.ok(worst < 500, `${name}, ${what}: /health took ${worst.toFixed(0)} ms`);
    }
    await stillServes(s, name);
  }
});

test.run();
