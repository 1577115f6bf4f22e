import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { uwsBuild, uwsUnavailable } from '../../src/http/uws/load.js';
import { exitWithin, freePort, runCli } from '../helpers/cli.js';
import { TEST_KEY, TEST_NOW_S, eventually, tempDir, serverSuite, testEngine } from '../helpers/server.js';

/** Known pitfalls of the dependencies that the core service touches. */
const snapshot = encodeSnapshot(generateRecords({ records: 2000, seed: 5, now: TEST_NOW_S }), TEST_NOW_S);

// A handler's error is planted in the main thread's store: one thread.
const test = serverSuite('uWebSockets.js pitfalls', () => ({ snapshot, options: { threads: 1 } }));
/** The pitfalls of a build of uWebSockets.js, where the tests run on it; the node engine has none of them. */
const build = testEngine().name === 'uws' ? uwsBuild().label : 'node';

test('an unexpected error inside a handler answers 500 without details, and the server keeps serving', async ({ t }) => {
  const store = t.server.feed.current!;
  const original = store.prefixEnd;
  store.prefixEnd = () => {
    throw new Error('secret internal detail');
  };
  try {
    const res = await t.api('count=1&_=boom');
    assert.is(res.status, 500);
    const body = await res.text();
    assert.is(body, 'Error: Internal server error');
    assert.is(res.headers.get('content-type'), 'text/plain; charset=utf-8');
  } finally {
    store.prefixEnd = original;
  }
  const after = await t.api('count=3');
  assert.is(after.status, 200);
  assert.is((await after.text()).split('\n').length, 4);
});

test('a request head that arrives in pieces is answered up to 4 KiB (v20.30: a longer one is dropped), and service goes on', async ({ t }) => {
  // uWebSockets.js v20.30 buffers at most 4 KiB of a head that spans reads, and
  // then closes the connection; a head read at once may be far longer (8 KiB
  // targets). v20.57 takes up to UWS_HTTP_MAX_HEADERS_SIZE however it comes.
  const send = (target: string, pieces: number) => new Promise<string>((resolve, reject) => {
    const socket = connect({ port: t.server.port, host: '127.0.0.1', noDelay: true });
    const wire = Buffer.from(`GET ${target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
    const size = Math.ceil(wire.length / pieces);
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    for (let i = 0; i < pieces; i++) setTimeout(() => socket.write(wire.subarray(i * size, (i + 1) * size)), i * 30);
  });
  assert.match(await send(`/api?key=${TEST_KEY}&count=1&_=${'a'.repeat(3500)}`, 3), /^HTTP\/1\.1 200 OK\r\n/);
  const pieced = await send(`/api?key=${TEST_KEY}&count=1&_=${'a'.repeat(5000)}`, 3);
  if (build === 'node' || build.includes('v20.57')) assert.match(pieced, /^HTTP\/1\.1 200 OK\r\n/);
  else assert.is(pieced, '');
  assert.match(await send(`/api?key=${TEST_KEY}&count=1&_=${'a'.repeat(8000)}`, 1), /^HTTP\/1\.1 200 OK\r\n/);
  assert.is((await t.api('count=1')).status, 200);
});

test('HTTP/1.0: the node engine answers it in full and closes; v20.57 answers 505 at once; v20.30 leaves it unanswered (docs/operations.md, Where it runs)', async ({ t }) => {
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect({ port: t.server.port, host: '127.0.0.1' });
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, 1000);
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', reject);
    socket.write(`GET /api?key=${TEST_KEY}&count=1 HTTP/1.0\r\n\r\n`);
  });
  if (build === 'node') assert.match(answer, /^HTTP\/1\.1 200 OK\r\n[^]*\r\nConnection: close\r\n\r\n[0-9.]+:\d+\n$/);
  else if (build.includes('v20.57')) assert.match(answer, /^HTTP\/1\.1 505 /);
  else assert.is(answer, '');
  assert.is((await t.api('count=1')).status, 200);
});

test('HEAD answers like GET, with the same headers and no body', async ({ t }) => {
  for (const q of ['count=5', 'get=json.file&count=2', 'type=bogus']) {
    const get = await t.api(q);
    const getBody = new Uint8Array(await get.arrayBuffer());
    const head = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { method: 'HEAD' });
    assert.is(head.status, get.status);
    for (const h of ['content-type', 'cache-control', 'content-disposition']) assert.is(head.headers.get(h), get.headers.get(h), h);
    assert.is(head.headers.get('content-length'), String(getBody.length));
    assert.is((await head.arrayBuffer()).byteLength, 0);
  }
  const health = await fetch(`${t.base}/health`, { method: 'HEAD' });
  assert.is(health.status, 200);
});

test('a query without "?" and odd queries parse as docs/api.md says', async ({ t }) => {
  assert.is(await (await t.get('/api')).text(), 'Error: Access key not provided');
  const odd = await t.get(`/api?k&key=${TEST_KEY}&count=2`);
  assert.is(odd.status, 200);
  assert.is((await odd.text()).split('\n').length, 3);
  const plus = await t.get(`/api?key=${TEST_KEY}&service=the+service&get=json&fields=the%20service&pretty=0&count=1`);
  assert.is(await plus.text(), '[{"the service":true}]');
  const lone = await t.get(`/api?&&key=${TEST_KEY}&&count=1&=x&`);
  assert.is(lone.status, 200);
});

test.run();

const processes = suite('process-level pitfalls');
/** A build of uWebSockets.js loads natively here (without UWS_USE_FALLBACK), and whether it is v20.57, which has no fallback. */
const loadsHere = uwsUnavailable() === null;
const native = loadsHere && uwsBuild().label.includes('v20.57');

/** The test snapshot and an empty keys file in a folder of their own, for a server started as a command. */
function serveFiles(): { snap: string; keys: string } {
  const dir = tempDir();
  const snap = join(dir, 's.msgpack');
  const keys = join(dir, 'k.json');
  writeFileAtomic(snap, snapshot);
  writeFileSync(keys, JSON.stringify({ keys: [] }));
  return { snap, keys };
}

processes('a second instance on the same port fails to start with a clear message', async () => {
  const { snap, keys } = serveFiles();
  const port = await freePort();
  const first = runCli(['serve', '--snapshot', snap, '--keys', keys, '--port', port, '--host', '127.0.0.1']);
  try {
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200, 10000, 'first instance');
    // Whatever answered must be the first instance, not another process that held the port.
    assert.match(first.stdout(), `listening on 127.0.0.1:${port}`);
    const second = runCli(['serve', '--snapshot', snap, '--keys', keys, '--port', port, '--host', '127.0.0.1']);
    const code = await exitWithin(second, 10000);
    assert.is(code, 1);
    assert.match(second.stderr(), `cannot listen on 127.0.0.1:${port}`);
    assert.is(second.stderr().trim().split('\n').length, 1, 'one line');
  } finally {
    first.proc.kill('SIGTERM');
    assert.is(await exitWithin(first, 10000), 0);
  }
});

processes('startup never runs on the slow fallback shim: with --engine uws, v20.30 falling back to it is refused, v20.57 has none', async () => {
  const child = runCli(['serve', '--snapshot', 'x', '--keys', 'y', '--port', '0', '--engine', 'uws'], { UWS_USE_FALLBACK: '1' });
  assert.is(await exitWithin(child, 10000), 1);
  if (native) {
    // Loaded natively whatever UWS_USE_FALLBACK says: the start goes on, to the missing keys file.
    assert.match(child.stderr(), 'keys file');
  } else {
    assert.match(child.stderr(), 'its slow fallback is refused');
    // Where no build has a binary for this Node (26), each says so.
    assert.match(child.stderr(), loadsHere ? 'UWS_USE_FALLBACK' : `no binary for Node ${process.versions.node}`);
    assert.is(child.stderr().trim().split('\n').length, 1, 'one line');
  }
});

processes('--engine auto: the node engine where no native build loads, saying why; a bad --engine gets one line and exit 2', async () => {
  const { snap, keys } = serveFiles();
  const port = await freePort();
  // v20.30 falls back to its shim with UWS_USE_FALLBACK, which is passed over; v20.57 loads natively anyway.
  const child = runCli(['serve', '--snapshot', snap, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--engine', 'auto'], { UWS_USE_FALLBACK: '1' });
  try {
    await eventually(() => child.stdout().includes('"event":"engine_selected"'), 10000, 'the engine_selected line');
    const line = JSON.parse(child.stdout().split('\n').find((l) => l.includes('"event":"engine_selected"'))!) as { engine: string; build: string; passed_over: string[] };
    assert.is(line.engine, native ? 'uws' : 'node');
    if (!native) {
      assert.is(line.build, `node:http ${process.versions.node}`);
      assert.ok(line.passed_over.some((r) => r.includes(loadsHere ? 'UWS_USE_FALLBACK' : `no binary for Node ${process.versions.node}`)), line.passed_over.join('; '));
    }
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/api?key=nope`).catch(() => null))?.status === 401, 10000, 'served');
  } finally {
    child.proc.kill('SIGTERM');
    await exitWithin(child, 20000);
  }
  const bad = runCli(['serve', '--snapshot', snap, '--keys', keys, '--engine', 'fast']);
  assert.is(await exitWithin(bad, 10000), 2);
  assert.is(bad.stderr().trim(), 'proxylist: --engine must be one of auto, uws, node, not "fast"');
  const badEnv = runCli(['serve', '--snapshot', snap, '--keys', keys], { PROXYLIST_ENGINE: 'uWS' });
  assert.is(await exitWithin(badEnv, 10000), 2);
  assert.match(badEnv.stderr(), '--engine must be one of auto, uws, node, not "uWS"');
});

processes.run();
