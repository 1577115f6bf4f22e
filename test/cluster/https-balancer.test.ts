import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type ClientHttp2Session } from 'node:http2';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { freePorts, needCommand, serveProcesses } from '../helpers/cli.js';
import { haproxyCheck, haproxyConfig, startHaproxy } from '../helpers/haproxy.js';
import { readRaw } from '../helpers/http-read.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * deploy/haproxy.cfg as shipped, with only its places moved (loopback, free
 * ports, a certificate of the tests' own authority): HTTPS on the front with
 * HTTP/2 and HTTP/1.1, the plain port sending clients to HTTPS, HTTP/1.1 to
 * three instances. Through it, node:http2 and curl --http2 get what an
 * instance answers over plain HTTP, byte for byte (docs/operations.md, HTTPS).
 */
interface Ctx {
  dir: string;
  ca: Buffer;
  caFile: string;
  front: number;
  redirect: number;
  cluster: Awaited<ReturnType<typeof serveProcesses>>;
  haproxy: ReturnType<typeof startHaproxy>;
}

const test = suite<Ctx>('deploy/haproxy.cfg over HTTPS and HTTP/2, three instances');
/** Every record whatever its age, so that two requests a moment apart select the same rows. */
const ALL = 'time=100000';

test.before(async (ctx) => {
  needCommand('curl', 'curl');
  ctx.dir = tempDir();
  const authority = new TestAuthority(ctx.dir);
  const pair = authority.issue('front');
  ctx.caFile = authority.ca;
  ctx.ca = readFileSync(authority.ca);
  const pem = join(ctx.dir, 'front.pem');
  writeFileSync(pem, Buffer.concat([readFileSync(pair.cert), readFileSync(pair.key)]));
  ctx.cluster = await serveProcesses(3, 20_000, 71, ['--drain-s', '0', '--trust-proxy', '127.0.0.1']);
  [ctx.front, ctx.redirect] = await freePorts(2);
  ctx.haproxy = startHaproxy(ctx.dir, haproxyConfig({ front: ctx.front, redirect: ctx.redirect, pem, instances: ctx.cluster.ports }));
  await eventually(async () => (await readRaw(ctx.front, '/health', { tls: { ca: ctx.ca } }).catch(() => null))?.status === 200, 10_000, 'haproxy ready');
});

test.after(async (ctx) => {
  await ctx.haproxy.stop();
  await ctx.cluster.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

/** One GET over an HTTP/2 session: status, headers and the body as it came. */
function get2(session: ClientHttp2Session, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, ...headers });
    const chunks: Buffer[] = [];
    let head: Record<string, unknown> = {};
    stream.on('response', (h) => (head = h));
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('end', () => resolve({ status: Number(head[':status']), headers: head, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
  });
}

test('haproxy -c accepts the shipped configuration with a certificate in place', (ctx) => {
  assert.is(haproxyCheck(ctx.haproxy.file), null);
});

test('HTTP/2 through haproxy gets the bytes an instance answers over plain HTTP: txt, JSON, gzip, a big body, and /metrics is refused', async (ctx) => {
  const session = connect(`https://localhost:${ctx.front}`, { ca: ctx.ca });
  try {
    await new Promise<void>((resolve, reject) => session.once('connect', () => resolve()).once('error', reject));
    assert.is(session.alpnProtocol, 'h2', 'ALPN chose HTTP/2');
    const instance = ctx.cluster.ports[0];
    for (const [path, headers] of [
      [`/api?key=k&${ALL}&count=20`, {}],
      [`/api?key=k&${ALL}&get=json&type=socks5`, {}],
      [`/api?key=k&${ALL}`, { 'accept-encoding': 'gzip' }],
      [`/api?key=k&${ALL}&get=json`, {}],
      ['/openapi.json', {}],
    ] as Array<[string, Record<string, string>]>) {
      const plain = await readRaw(instance, path, { headers });
      const h2 = await get2(session, path, headers);
      assert.is(h2.status, 200, path);
      assert.is(plain.status, 200, path);
      assert.is(h2.headers['content-encoding'], plain.headers['content-encoding'], path);
      assert.ok(h2.body.equals(plain.body), `${path}: the same ${plain.body.length} bytes`);
    }
    const big = await get2(session, `/api?key=k&${ALL}&get=json`);
    assert.ok(big.body.length > 3_000_000, `a big body arrives whole (${big.body.length} bytes)`);
    for (const path of ['/metrics', '/usage']) assert.is((await get2(session, path)).status, 403, path);
    assert.match(String((await get2(session, '/health')).headers['strict-transport-security']), /max-age=/);
  } finally {
    session.close();
  }
});

test('curl --http2 gets the same bytes; plain HTTP on the port of 80 is sent to HTTPS', async (ctx) => {
  const path = `/api?key=k&${ALL}&get=json&count=100`;
  const out = join(ctx.dir, 'curl.out');
  const run = spawnSync('curl', ['-sS', '--http2', '--cacert', ctx.caFile, '--resolve', `localhost:${ctx.front}:127.0.0.1`, '-o', out, '-w', '%{http_version} %{http_code}', `https://localhost:${ctx.front}${path}`], { encoding: 'utf8' });
  assert.is(run.stdout, '2 200', run.stderr);
  assert.ok(readFileSync(out).equals((await readRaw(ctx.cluster.ports[1], path)).body));
  const redirected = await readRaw(ctx.redirect, '/api?key=k&count=1');
  assert.is(redirected.status, 301);
  assert.match(String(redirected.headers.location), /^https:\/\//);
});

test('a held wait over HTTP/2 is answered when a new snapshot arrives', async (ctx) => {
  const session = connect(`https://localhost:${ctx.front}`, { ca: ctx.ca });
  try {
    const first = await get2(session, `/api?key=k&get=json`);
    const cursor = String(first.headers['list-cursor']);
    assert.ok(cursor.length > 0, 'a cursor');
    const held = get2(session, `/api?key=k&get=json&since=${encodeURIComponent(cursor)}&wait=30`);
    await new Promise((r) => setTimeout(r, 500));
    const now = Math.floor(Date.now() / 1000);
    writeFileAtomic(ctx.cluster.snapshot, encodeSnapshot(generateRecords({ records: 20_000, seed: 72, now }), now));
    const answer = await held;
    assert.is(answer.status, 200);
    const changes = JSON.parse(answer.body.toString()) as { upsert: Record<string, unknown>; remove: string[] };
    assert.ok(Object.keys(changes.upsert).length + changes.remove.length > 0, 'the change set of the new snapshot');
  } finally {
    session.close();
  }
});

test.run();
