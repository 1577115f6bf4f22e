import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Hex } from '../../src/access/keys.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, runCli } from '../helpers/cli.js';
import { TEST_NOW_S, eventually, startTestServer, type TestServer } from '../helpers/server.js';

const test = suite<{ t: TestServer }>('proxylist keys');
test.before(async (ctx) => {
  const snapshot = encodeSnapshot(generateRecords({ records: 50, seed: 1, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.t = await startTestServer({ snapshot, keys: { keys: [] } });
});
test.after((ctx) => ctx.t.close());

const cli = async (args: string[]) => {
  const child = runCli(args);
  const code = await exitWithin(child, 15000);
  return { code, out: child.stdout(), err: child.stderr() };
};

test('add prints a new key once and stores only its hash; the running server picks it up', async ({ t }) => {
  const added = await cli(['keys', 'add', '--keys', t.keys, '--name', 'acme', '--daily', '1000', '--per-window', 'null']);
  assert.is(added.code, 0, added.err);
  const key = added.out.trim();
  assert.match(key, /^[0-9A-Za-z]{22,}$/);
  assert.ok(key.length * Math.log2(62) >= 128, 'at least 128 bits');
  const file = readFileSync(t.keys, 'utf8');
  assert.not.match(file, key);
  assert.match(file, sha256Hex(key));
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 200, 3000, 'the new key');

  const other = await cli(['keys', 'add', '--keys', t.keys]);
  assert.is.not(other.out.trim(), key, 'keys are random');
  const dup = await cli(['keys', 'add', '--keys', t.keys, '--name', 'acme']);
  assert.is(dup.code, 2);
  assert.match(dup.err, 'a key named "acme" exists already');
});

test('list shows name, status, expiry and limits, never a key', async ({ t }) => {
  const listed = await cli(['keys', 'list', '--keys', t.keys]);
  assert.is(listed.code, 0, listed.err);
  const lines = listed.out.trim().split('\n');
  assert.match(lines[0], /^ID\s+NAME\s+STATUS\s+EXPIRES\s+RATE\s+DAILY\s+SUBNETS$/);
  assert.match(lines[1], /^[0-9a-f]{8}\s+acme\s+active\s+-\s+unlimited\/5s\s+1000\s+10$/);
  assert.is(lines.length, 3);
});

test('revoke disables a key by name; the server refuses it at the next reload', async ({ t }) => {
  const key = (await cli(['keys', 'add', '--keys', t.keys, '--name', 'temp', '--per-window', 'null'])).out.trim();
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 200, 3000, 'the new key');
  const revoked = await cli(['keys', 'revoke', '--keys', t.keys, 'temp']);
  assert.is(revoked.code, 0, revoked.err);
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 401, 3000, 'revoked');
  assert.match((await cli(['keys', 'list', '--keys', t.keys])).out, /temp\s+disabled/);
  const none = await cli(['keys', 'revoke', '--keys', t.keys, 'nobody']);
  assert.is(none.code, 2);
});

test.run();
