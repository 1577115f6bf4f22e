import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { exitWithin, freePort, runCli, runCliSync } from '../helpers/cli.js';
import { readRaw } from '../helpers/http-read.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * `serve --tls-cert --tls-key` as an operator starts it (docs/operations.md, HTTPS): a
 * pair that cannot serve is one line naming the file, exit 1, and nothing
 * listens; an expired certificate starts with a warning; plain HTTP that the
 * network reaches is warned of; SIGTERM drains over HTTPS too.
 */
interface Ctx {
  dir: string;
  authority: TestAuthority;
  snapshot: string;
  keys: string;
  good: { cert: string; key: string };
}

const test = suite<Ctx>('serve over HTTPS: the start');

test.before((ctx) => {
  ctx.dir = tempDir();
  ctx.authority = new TestAuthority(ctx.dir);
  ctx.good = ctx.authority.issue('good');
  const now = Math.floor(Date.now() / 1000);
  ctx.snapshot = join(ctx.dir, 'snapshot.msgpack');
  writeFileAtomic(ctx.snapshot, encodeSnapshot(generateRecords({ records: 50, seed: 3, now }), now));
  ctx.keys = join(ctx.dir, 'keys.json');
  writeFileSync(ctx.keys, JSON.stringify({ keys: [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }] }), { mode: 0o600 });
});

test.after((ctx) => rmSync(ctx.dir, { recursive: true, force: true }));

/** Every line of a key file's body: none may appear in what the service printed. */
const keyLines = (file: string): string[] => readFileSync(file, 'utf8').split('\n').filter((l) => l && !l.startsWith('-----'));

test('a pair that cannot serve: one line naming the file, exit 1, never listening', async (ctx) => {
  const other = ctx.authority.issue('other');
  const notPem = join(ctx.dir, 'not-pem.txt');
  writeFileSync(notPem, 'this is no certificate\n');
  const folder = ctx.dir;
  const cases: Array<[string, string, string]> = [
    [join(ctx.dir, 'missing.pem'), ctx.good.key, `TLS certificate ${join(ctx.dir, 'missing.pem')} does not exist`],
    [ctx.good.cert, join(ctx.dir, 'missing.key'), `TLS key ${join(ctx.dir, 'missing.key')} does not exist`],
    [notPem, ctx.good.key, `TLS certificate ${notPem} is not PEM: no BEGIN CERTIFICATE block`],
    [ctx.good.cert, notPem, `TLS key ${notPem} is not a PEM private key`],
    [ctx.good.key, ctx.good.key, `TLS certificate ${ctx.good.key} is not PEM`],
    [folder, ctx.good.key, `TLS certificate ${folder} is a folder`],
    [ctx.good.cert, other.key, `TLS key ${other.key} does not match the certificate ${ctx.good.cert}`],
  ];
  for (const [cert, key, says] of cases) {
    const port = await freePort();
    const r = runCliSync(['serve', '--snapshot', ctx.snapshot, '--keys', ctx.keys, '--port', port, '--host', '127.0.0.1', '--tls-cert', cert, '--tls-key', key]);
    assert.is(r.status, 1, r.stderr);
    assert.is(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    assert.match(r.stderr, `proxylist: ${says}`);
    assert.not.match(r.stdout, /"event":"listening"/);
    for (const line of [...keyLines(ctx.good.key), ...keyLines(other.key)]) assert.not.ok((r.stdout + r.stderr).includes(line), 'no part of a key printed');
  }
  const alone = runCliSync(['serve', '--snapshot', ctx.snapshot, '--keys', ctx.keys, '--tls-cert', ctx.good.cert]);
  assert.is(alone.status, 2);
  assert.is(alone.stderr, 'proxylist: --tls-cert and --tls-key go together: --tls-cert was given alone\n');
});

test('an expired certificate starts, with a warning; plain HTTP on an address the network reaches is warned of, on loopback it is not', async (ctx) => {
  const expired = ctx.authority.issue('expired', { days: 1, expiredDaysAgo: 2 });
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', ctx.snapshot, '--keys', ctx.keys, '--port', port, '--host', '127.0.0.1', '--tls-cert', expired.cert, '--tls-key', expired.key, '--drain-s', '0']);
  try {
    await eventually(() => child.stdout().includes('"event":"listening"'), 10_000, 'listening');
    assert.match(child.stdout(), /"event":"tls_expired"/);
    const answered = await readRaw(Number(port), '/health', { tls: { ca: readFileSync(ctx.authority.ca) } }).then(() => 'answered', (err: Error) => err.message);
    assert.match(answered, /expired/, 'clients refuse it');
    assert.not.match(child.stdout(), /"event":"plain_http"/);
  } finally {
    child.proc.kill('SIGTERM');
    await exitWithin(child, 10_000);
  }
  for (const [host, warned] of [['0.0.0.0', true], ['127.0.0.1', false]] as const) {
    const plainPort = await freePort();
    const plain = runCli(['serve', '--snapshot', ctx.snapshot, '--keys', ctx.keys, '--port', plainPort, '--host', host, '--drain-s', '0']);
    try {
      await eventually(() => plain.stdout().includes('"event":"listening"'), 10_000, 'listening');
      assert.is(/"event":"plain_http".*access keys travel in cleartext/.test(plain.stdout()), warned, host);
    } finally {
      plain.proc.kill('SIGTERM');
      await exitWithin(plain, 10_000);
    }
  }
});

test('SIGTERM drains over HTTPS: a held request is answered, then the process ends', async (ctx) => {
  const port = Number(await freePort());
  const child = runCli(['serve', '--snapshot', ctx.snapshot, '--keys', ctx.keys, '--port', String(port), '--host', '127.0.0.1', '--tls-cert', ctx.good.cert, '--tls-key', ctx.good.key, '--drain-s', '1']);
  const ca = readFileSync(ctx.authority.ca);
  try {
    await eventually(async () => (await readRaw(port, '/health', { tls: { ca } }).catch(() => null))?.status === 200, 10_000, 'ready over HTTPS');
    const cursor = String((await readRaw(port, '/api?key=k', { tls: { ca } })).headers['list-cursor']);
    const held = readRaw(port, `/api?key=k&since=${encodeURIComponent(cursor)}&wait=30`, { tls: { ca } });
    await new Promise((r) => setTimeout(r, 200));
    child.proc.kill('SIGTERM');
    const answer = await held;
    assert.is(answer.status, 200, 'the held request gets its (empty) change set');
    assert.is(await exitWithin(child, 15_000), 0);
  } finally {
    if (child.proc.exitCode === null) child.proc.kill('SIGKILL');
  }
});

test.run();
