import { readFileSync, writeFileSync } from 'node:fs';
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
test.after((ctx) => ctx.t?.close());

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
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 200, 10_000, 'the new key');

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
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 200, 10_000, 'the new key');
  const revoked = await cli(['keys', 'revoke', '--keys', t.keys, 'temp']);
  assert.is(revoked.code, 0, revoked.err);
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 401, 10_000, 'revoked');
  assert.match((await cli(['keys', 'list', '--keys', t.keys])).out, /temp\s+disabled/);
  const none = await cli(['keys', 'revoke', '--keys', t.keys, 'nobody']);
  assert.is(none.code, 2);
});

test('revoke and enable by id prefix; twice says nothing changed; the server follows', async ({ t }) => {
  const key = (await cli(['keys', 'add', '--keys', t.keys, '--name', 'prefixed', '--per-window', 'null'])).out.trim();
  const id = sha256Hex(key).slice(0, 8);
  const revoked = await cli(['keys', 'revoke', '--keys', t.keys, id]);
  assert.is(revoked.code, 0, revoked.err);
  assert.is(revoked.out, `revoked prefixed (id ${id})\n`);
  const again = await cli(['keys', 'revoke', '--keys', t.keys, id]);
  assert.is(again.out, `prefixed (id ${id}) is revoked already; nothing changed\n`);
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 401, 10_000, 'revoked');
  const enabled = await cli(['keys', 'enable', '--keys', t.keys, 'prefixed']);
  assert.is(enabled.out, `enabled prefixed (id ${id})\n`);
  await eventually(async () => (await t.get(`/api?key=${key}&count=1`)).status === 200, 10_000, 'enabled again');
});

test('revoke by any unique id prefix of 4 hex digits or more; an ambiguous one lists the candidates; a shorter one says why', async ({ t }) => {
  // Keys until two ids share their first 4 hex digits (a few hundred at most; each add is a process, so a cap).
  const ids = new Map<string, string>();
  let clash: [string, string] | null = null;
  for (let i = 0; i < 400 && !clash; i++) {
    const key = `prefix-test-${i}`;
    const id = sha256Hex(key);
    const other = ids.get(id.slice(0, 4));
    if (other) clash = [other, id];
    else ids.set(id.slice(0, 4), id);
  }
  assert.ok(clash, 'two ids with the same first 4 hex digits');
  const [a, b] = clash!;
  const file = JSON.parse(readFileSync(t.keys, 'utf8')) as { keys: unknown[] };
  file.keys.push({ sha256: a, name: 'first' }, { sha256: b, name: 'second' });
  writeFileSync(t.keys, JSON.stringify(file));
  const ambiguous = await cli(['keys', 'revoke', '--keys', t.keys, a.slice(0, 4)]);
  assert.is(ambiguous.code, 2);
  assert.is(ambiguous.err, `proxylist: "${a.slice(0, 4)}" matches 2 keys: ${a.slice(0, 8)} (first), ${b.slice(0, 8)} (second); give more of the id\n`);
  // The shortest prefix that tells them apart.
  let n = 5;
  while (a.slice(0, n) === b.slice(0, n)) n++;
  const one = await cli(['keys', 'revoke', '--keys', t.keys, a.slice(0, n)]);
  assert.is(one.code, 0, one.err);
  assert.is(one.out, `revoked first (id ${a.slice(0, 8)})\n`);
  const short = await cli(['keys', 'revoke', '--keys', t.keys, a.slice(0, 3)]);
  assert.is(short.err, `proxylist: no key named or with an id starting "${a.slice(0, 3)}" (an id prefix needs 4 hex digits or more)\n`);
});

test('add refuses a malformed --expires and a negative limit in one line each, and warns of a time already past', async ({ t }) => {
  const tomorrow = await cli(['keys', 'add', '--keys', t.keys, '--expires', 'tomorrow']);
  assert.is(tomorrow.code, 2);
  assert.is(tomorrow.err, 'proxylist: --expires must be an ISO 8601 time such as 2027-01-31T00:00:00+02:00, not "tomorrow"\n');
  const negative = await cli(['keys', 'add', '--keys', t.keys, '--daily', '-5']);
  assert.is(negative.code, 2);
  assert.is(negative.err, 'proxylist: --daily must be an integer >= 1, or null for unlimited\n');
  const missing = await cli(['keys', 'add', '--keys', '--name', 'x']);
  assert.is(missing.code, 2);
  assert.is(missing.err, 'proxylist: --keys needs a value (a value that starts with "-" is not one)\n');
  const past = await cli(['keys', 'add', '--keys', t.keys, '--name', 'old', '--expires', '2020-01-01T00:00:00+02:00']);
  assert.is(past.code, 0, past.err);
  assert.match(past.err, 'warning: --expires 2020-01-01T00:00:00+02:00 has passed');
  assert.match((await cli(['keys', 'list', '--keys', t.keys])).out, /old\s+expired/);
});

test.run();
