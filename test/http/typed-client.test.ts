import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, evolveRecords, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, tempDir } from '../helpers/server.js';

/**
 * openapi.json fits generated clients: openapi-typescript makes the types,
 * a program written against them with openapi-fetch uses every parameter
 * with its real type (numbers, lists of enumerated values), the project's
 * tsc checks it (and that a value outside an enum does not compile), and
 * the program runs against a server: a list, CSV, stats, and a `since` loop.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const bin = (path: string) => join(ROOT, 'node_modules', path);

const PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const client = createClient<paths>({ baseUrl: process.env.BASE, querySerializer: { array: { style: 'form', explode: false } } });
const key = process.env.KEY!;

// Every parameter, each with the type the document gives it.
const all = await client.GET('/api', {
  params: {
    query: {
      key, type: ['http', 'https', 'socks4', 'socks5'], anon: ['transparent', 'anonymous', 'elite'], port: [80, 8080, 3128],
      ping: 100000, time: 100000, works: 0, country: ['US', 'DE', 'RU'], cm: 'except', city: ['Nowhere'], service: ['telegram'],
      sort: 'ping', offset: 0, count: 50, lang: 'en', get: 'json', fields: ['ip', 'port', 'type'], split_ip: '1', pretty: '0',
      wrap: '1', format: 'object', ip: ['203.0.113.7', '[2001:db8::1]:8080'], ipv: [4, 6], asn: ['13335', 'AS16509'], hosting: '0', mobile: '1',
    },
  },
});
// Checked by the compiler only, never sent.
export const refused = () => [
  // @ts-expect-error a type the document does not list does not compile
  client.GET('/api', { params: { query: { key, type: ['socks6'] } } }),
  // @ts-expect-error a count is a number
  client.GET('/api', { params: { query: { key, count: '2' } } }),
];

const list = await client.GET('/api', { params: { query: { key, type: ['socks5', 'http'], count: 20, time: 100000 } }, parseAs: 'text' });
const stats = await client.GET('/api', { params: { query: { key, get: 'stats', time: 100000 } } });
const csv = await client.GET('/api', { params: { query: { key, get: 'csv', fields: ['ip', 'asn', 'org', 'hosting'], count: 5, time: 100000 } }, parseAs: 'text' });
const whole = await client.GET('/api', { params: { query: { key, get: 'json', type: ['socks5'], time: 100000 } } });
const cursor = whole.response.headers.get('list-cursor')!;
console.error('waiting');
const changes = await client.GET('/api', { params: { query: { key, get: 'json', type: ['socks5'], time: 100000, since: cursor, wait: 30 } } });
const changeSet = changes.data as { reset: boolean; upsert: Record<string, unknown>; remove: string[] };
console.log(JSON.stringify({
  all: all.response.status,
  listStatus: list.response.status,
  lines: String(list.data).trim().split('\\n').length,
  statsStatus: stats.response.status,
  csvType: csv.response.headers.get('content-type'),
  csvLines: String(csv.data).split('\\r\\n'),
  stats: stats.data,
  wholeStatus: whole.response.status,
  changesStatus: changes.response.status,
  reset: changeSet.reset,
  changed: Object.keys(changeSet.upsert).length + changeSet.remove.length,
}));
`;

const run = (command: string, args: string[], o: { cwd?: string; env?: NodeJS.ProcessEnv; onStderr?: (s: string) => void } = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = execFile(command, args, { cwd: o.cwd, env: { ...process.env, ...o.env }, timeout: 120_000 }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }));
    child.stderr?.on('data', (d: Buffer) => o.onStderr?.(d.toString()));
  });

/** A snapshot and the next one, which changes a tenth of its records: its change set is not a reset. */
const first = generateRecords({ records: 2000, seed: 101, now: TEST_NOW_S });
const next = evolveRecords(first, { seed: 102, share: 0.1, now: TEST_NOW_S + 1 });

test('a client generated from openapi.json type-checks with every parameter and runs: a list, stats and a since loop', async () => {
  const dir = tempDir();
  const t = await startTestServer({ snapshot: encodeSnapshot(first, TEST_NOW_S) });
  try {
    mkdirSync(join(dir, 'out'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    const generated = await run(process.execPath, [bin('openapi-typescript/bin/cli.js'), join(ROOT, 'openapi.json'), '-o', join(dir, 'api.d.ts')]);
    assert.is(generated.code, 0, generated.stderr);
    writeFileSync(join(dir, 'client.ts'), PROGRAM);
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', outDir: 'out', skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] }, files: ['client.ts'] }));
    const checked = await run(process.execPath, [bin('typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir });
    assert.is(checked.code, 0, `tsc: ${checked.stdout}${checked.stderr}`);

    let publish: () => void = () => undefined;
    const published = new Promise<void>((resolve) => (publish = resolve));
    const client = run(process.execPath, [join(dir, 'out', 'client.js')], {
      env: { BASE: t.base, KEY: TEST_KEY },
      onStderr: (s) => {
        if (s.includes('waiting')) publish();
      },
    });
    // Until the client waits for the change set, or ends without it.
    await Promise.race([published, client]);
    await new Promise((r) => setTimeout(r, 300));
    writeFileAtomic(t.snapshot, encodeSnapshot(next, TEST_NOW_S + 1));
    const result = await client;
    assert.is(result.code, 0, result.stderr);
    const r = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal([r.all, r.listStatus, r.statsStatus, r.wholeStatus, r.changesStatus], [200, 200, 200, 200, 200]);
    assert.is(r.lines, 20);
    assert.is(r.csvType, 'text/csv; charset=utf-8; header=present');
    assert.is((r.csvLines as string[])[0], 'ip,asn,org,hosting');
    assert.is((r.csvLines as string[]).length, 7, 'the header row, five rows, and nothing after the last CRLF');
    assert.ok(typeof r.stats === 'object' && r.stats !== null, 'stats as JSON');
    assert.is(r.reset, false);
    assert.ok((r.changed as number) > 0, 'the change set of the new snapshot');
  } finally {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
