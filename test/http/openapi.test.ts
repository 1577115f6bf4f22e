import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { OPENAPI_PATH, assertDocumented, openapi } from '../helpers/openapi.js';
import { TEST_KEY, TEST_NOW_S, serverSuite } from '../helpers/server.js';

/** The OpenAPI document (openapi.json): served as the repository holds it, linted, and true to the server. */
const test = serverSuite('openapi.json', () => ({ snapshot: encodeSnapshot(generateRecords({ records: 500, seed: 81, now: TEST_NOW_S }), TEST_NOW_S) }));

test('GET /openapi.json serves the repository\'s document, without a key; HEAD its length', async ({ t }) => {
  const file = readFileSync(OPENAPI_PATH);
  const res = await t.get('/openapi.json');
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(file));
  const head = await t.get('/openapi.json', { method: 'HEAD' });
  assert.is(head.headers.get('content-length'), String(file.length));
  assert.is((await t.get('/openapi.json', { method: 'POST' })).status, 405);
  assert.is(openapi.paths['/openapi.json'].get.responses['200'] !== undefined, true);
});

test('the document passes @redocly/cli lint with its recommended rules', () => {
  const cli = fileURLToPath(new URL('../../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));
  const run = spawnSync(process.execPath, [cli, 'lint', fileURLToPath(OPENAPI_PATH), '--extends', 'recommended'], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    timeout: 60_000,
  });
  assert.is(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout + run.stderr, 'valid');
});

test('every enumerated value the document lists is accepted, and a value it does not list is refused', async ({ t }) => {
  // A parameter of one value, or a list (style form, not exploded) of enumerated values.
  const values = (p: (typeof openapi.components.parameters)[string]) => p.schema.enum ?? p.schema.items?.enum;
  const params = Object.values(openapi.components.parameters).filter((p) => p.in === 'query' && values(p));
  assert.ok(params.length >= 10, `${params.length} enumerated parameters`);
  for (const p of params) {
    // JSON-only parameters are validated with get=json.
    const extra = ['fields', 'split_ip', 'pretty', 'wrap', 'format', 'ip'].includes(p.name) ? '&get=json' : '';
    for (const value of values(p)!) {
      const q = `${p.name}=${encodeURIComponent(value)}${extra}`;
      const res = await t.api(q);
      const body = await res.text();
      assert.is(res.status, 200, `?${q}: ${body}`);
      assertDocumented(q, res, body);
    }
    const res = await t.api(`${p.name}=undocumented${extra}`);
    assert.is(res.status, 400, p.name);
    assertDocumented(`${p.name}=undocumented`, res, await res.text());
  }
});

test('conditional answers, errors and every documented status the tests reach match the document', async ({ t }) => {
  const ok = await t.api('count=3');
  await ok.arrayBuffer();
  const notModified = await fetch(`${t.base}/api?key=${TEST_KEY}&count=3`, { headers: { 'if-none-match': ok.headers.get('etag')! } });
  assert.is(notModified.status, 304);
  assertDocumented('count=3', notModified, await notModified.text());
  for (const [path, status] of [['/api', 401], ['/api?key=nope', 401], [`/api?key=${TEST_KEY}&sort=fast`, 400], [`/api?key=${TEST_KEY}&${'x'.repeat(9000)}`, 414]] as const) {
    const res = await t.get(path);
    assert.is(res.status, status, path.slice(0, 40));
    assertDocumented(path.slice(0, 40), res, await res.text());
  }
});

test.run();

/**
 * docs/api.md, the API for people, and openapi.json, for programs, say the
 * same: the same parameters, the same enumerated values and bounds, and every
 * error message of the document's responses in the manual.
 */
const manual = suite('docs/api.md and openapi.json');

manual('every query parameter, every enumerated value and every integer bound is in both, and nothing more', () => {
  const text = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const table = text.slice(text.indexOf('## Parameters'), text.indexOf('\n## ', text.indexOf('## Parameters') + 1));
  const rows = new Map<string, string>();
  for (const line of table.split('\n')) {
    const m = /^\| ((?:`[a-z_]+`(?:, )?)+) \| (.*)$/.exec(line);
    if (m) for (const name of m[1].match(/`([a-z_]+)`/g)!) rows.set(name.slice(1, -1), m[2]);
  }
  const documented = Object.values(openapi.components.parameters).filter((p) => p.in === 'query');
  const keyScheme = 'key';
  assert.equal([...rows.keys()].sort(), [...documented.map((p) => p.name), keyScheme].sort(), 'the same parameters');
  for (const p of documented) {
    const row = rows.get(p.name)!;
    const values = p.schema.enum ?? p.schema.items?.enum ?? [];
    for (const v of values) assert.ok(row.includes(v), `${p.name}: ${v} in docs/api.md`);
    const bounds = p.schema as { type?: string; minimum?: number; maximum?: number; items?: { minimum?: number; maximum?: number } };
    const lo = bounds.minimum ?? bounds.items?.minimum;
    const hi = bounds.maximum ?? bounds.items?.maximum;
    if (lo !== undefined) assert.ok(row.includes(`≥ ${lo}`) || row.includes(`${lo}..`), `${p.name}: the minimum ${lo} in docs/api.md`);
    if (hi !== undefined && hi < Number.MAX_SAFE_INTEGER) assert.ok(row.includes(`..${hi}`), `${p.name}: the maximum ${hi} in docs/api.md`);
  }
});

manual.run();
