import * as assert from 'uvu/assert';
import { brotliDecompressSync } from 'node:zlib';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { readRaw } from '../helpers/http-read.js';
import { TEST_KEY, TEST_NOW_S, eventually, serverSuite } from '../helpers/server.js';

/** The pages for people over HTTP (docs/pages.md): from memory, with ETags and compression, and nothing but their files. */
const test = serverSuite('pages', () => ({ snapshot: encodeSnapshot(generateRecords({ records: 200, seed: 3, now: TEST_NOW_S }), TEST_NOW_S) }));

test('/ and /docs, and every file they load from this service, with their types', async ({ t }) => {
  for (const path of ['/', '/docs']) {
    const res = await t.get(path);
    assert.is(res.status, 200);
    assert.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
    // Nothing from another origin, no inline script, framed by no page, no Referer sent anywhere.
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) assert.ok(csp.split('; ').includes(directive), `${path}: ${directive} in ${csp}`);
    assert.not.match(csp, /script-src[^;]*unsafe/);
    assert.is(res.headers.get('referrer-policy'), 'no-referrer');
    assert.is(res.headers.get('x-frame-options'), 'DENY');
    const html = await res.text();
    // Every script and style is the service's own: a path, never another host.
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((r) => !r.startsWith('data:'));
    assert.ok(refs.length >= 2, `${path} loads ${refs.join(', ')}`);
    for (const ref of refs) {
      assert.ok(ref.startsWith('/'), `${ref} is a path of this service`);
      const asset = await t.get(ref);
      assert.is(asset.status, 200, ref);
      assert.match(asset.headers.get('content-type') ?? '', ref.endsWith('.css') ? /^text\/css/ : ref.endsWith('.js') ? /^text\/javascript/ : /^text\/html/);
      await asset.arrayBuffer();
    }
  }
});

test('every answer of the service says nosniff: pages, /api in each outcome, errors, /health, /metrics, /openapi.json', async ({ t }) => {
  for (const path of ['/', '/assets/style.css', '/api', `/api?key=${TEST_KEY}`, `/api?key=${TEST_KEY}&get=json&count=2`, `/api?key=${TEST_KEY}&type=nope`, '/health', '/metrics', '/openapi.json', '/no-such-page']) {
    const res = await t.get(path);
    await res.arrayBuffer();
    assert.is(res.headers.get('x-content-type-options'), 'nosniff', `${path} (${res.status})`);
  }
});

test('an ETag and a 304; compressed once, then sent compressed, the same bytes decoded; HEAD says the length', async ({ t }) => {
  const first = await readRaw(t.server.port, '/assets/swagger-ui-bundle.js');
  const etag = first.headers.etag as string;
  assert.match(etag, /^W\/"[0-9A-Za-z_-]{22}"$/);
  assert.is(first.headers['cache-control'], 'no-cache');
  assert.is((await readRaw(t.server.port, '/assets/swagger-ui-bundle.js', { headers: { 'if-none-match': etag } })).status, 304);
  let encoded = first;
  await eventually(async () => (encoded = await readRaw(t.server.port, '/assets/swagger-ui-bundle.js', { headers: { 'accept-encoding': 'br' } })).headers['content-encoding'] === 'br', 20_000, 'the brotli copy');
  assert.ok(encoded.body.length < first.body.length / 3, `${encoded.body.length} bytes in brotli, ${first.body.length} plain`);
  assert.ok(brotliDecompressSync(encoded.body).equals(first.body));
  assert.is(encoded.headers.etag, etag);
  const head = await readRaw(t.server.port, '/', { method: 'HEAD' });
  assert.is(head.headers['content-length'], String((await readRaw(t.server.port, '/')).body.length));
  assert.is(head.body.length, 0);
});

test('nothing else: other methods get 405, other files 404', async ({ t }) => {
  assert.is((await t.get('/', { method: 'POST' })).status, 405);
  for (const path of ['/assets/', '/assets/builder.js.map', '/assets/../package.json', '/web/index.html', '/index.html']) assert.is((await t.get(path)).status, 404, path);
});

test.run();
