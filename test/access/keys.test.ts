import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS, KeyTable, sha256Hex, type KeysData } from '../../src/access/keys.js';
import { readKeysOffThread } from '../../src/access/keys-thread.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, eventually, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const parse = (doc: unknown) => KeyTable.parse(JSON.stringify(doc));
const rejects = (doc: unknown, message: string | RegExp) => {
  try {
    KeyTable.parse(typeof doc === 'string' ? doc : JSON.stringify(doc));
  } catch (err) {
    assert.match((err as Error).message, message);
    return;
  }
  assert.unreachable(`accepted ${JSON.stringify(doc)}`);
};

const file = suite('keys file');

file('a key is found by its digest among digests that share their first bytes, and by the string it was presented as', () => {
  const prefix = sha256Hex('target').slice(0, 8);
  const twins = Array.from({ length: 6 }, (_, i) => prefix + sha256Hex(`twin-${i}`).slice(8));
  const t = parse({ keys: [{ key: 'target', name: 'target' }, ...twins.map((sha256, i) => ({ sha256, name: `twin-${i}` })), ...Array.from({ length: 500 }, (_, i) => ({ key: `other-${i}` }))] });
  const now = Date.parse('2026-11-22T00:00:00Z');
  twins.forEach((id, i) => assert.is(t.get(id)?.name, `twin-${i}`));
  assert.is(t.get(prefix + '0'.repeat(56)), undefined, 'the same first bytes, another digest');
  // Presented inside a query string, as clients do; found again by the same text later.
  const query = 'type=http&key=target&count=5';
  assert.is(t.find(query.slice(14, 20), now)?.label, 'target');
  assert.is(t.find('target', now)?.id, sha256Hex('target'));
  for (let i = 0; i < 500; i++) assert.is(t.find(`other-${i}`, now)?.id, sha256Hex(`other-${i}`), `other-${i}`);
  assert.is(t.find('nobody', now), null);
  // Entries are made from the table when asked for: the same limits are one object.
  assert.ok(t.find('other-1', now)!.limits === t.find('other-2', now)!.limits);
});

file('plain and sha256 entries, defaults, null limits, disabled and expiry', () => {
  const t = parse({
    keys: [
      { key: 'plain', name: 'acme' },
      { sha256: sha256Hex('hashed').toUpperCase(), name: 'bench', limits: { per_window: null, daily: null, subnets: null } },
      { key: 'old', disabled: true },
      { key: 'trial', expires_at: '2026-12-01T00:00:00+02:00', limits: { daily: 1000 } },
    ],
  });
  const now = Date.parse('2026-11-22T00:00:00Z');
  assert.equal(t.find('plain', now)?.limits, DEFAULT_LIMITS);
  assert.is(t.find('plain', now)?.label, 'acme');
  assert.equal(t.find('hashed', now)?.limits, { perWindow: null, windowS: 5, daily: null, subnets: null });
  assert.is(t.find('old', now), null);
  assert.is(t.find('trial', now)?.limits.daily, 1000);
  assert.is(t.find('trial', now)?.label, sha256Hex('trial').slice(0, 8));
  assert.is(t.find('trial', Date.parse('2026-11-30T22:00:00Z')), null, 'expired at midnight UTC+2');
  assert.is(t.find('nope', now), null);
});

file('read on its thread, a keys table arrives in shared memory: a serving thread handed it reads the same bytes, not a copy', async () => {
  const path = join(tempDir(), 'keys.json');
  writeFileSync(path, JSON.stringify({ keys: Array.from({ length: 300 }, (_, i) => ({ key: `key-${i}`, name: `name ${i}`, limits: { daily: i + 1 } })) }));
  const data = await readKeysOffThread(path);
  const arrays = [data.ids, data.expires, data.limits, data.flags, data.nameOffsets, data.names, data.positions];
  assert.ok(arrays.every((a) => a.buffer instanceof SharedArrayBuffer), 'every array in shared memory');
  assert.is(new KeyTable(data).find('key-7', Date.now())?.limits.daily, 8);
  // A message carries it as it carries it to a serving thread: a change seen through one is seen through the other.
  const { port1, port2 } = new MessageChannel();
  const handed = await new Promise<KeysData>((resolve) => {
    port2.once('message', resolve);
    port1.postMessage(data);
  });
  port1.close();
  handed.limits[0] = 12345;
  assert.is(data.limits[0], 12345);
});

file('invalid files are rejected with a message naming the entry', () => {
  rejects('{"keys": [', /not valid JSON/);
  rejects({ key: 'x' }, /must have required property 'keys'|unknown field "key"/);
  rejects({ keys: [{ name: 'a' }] }, 'keys[0] (name "a") must have exactly one of "key" and "sha256"');
  rejects({ keys: [{ key: 'a', sha256: sha256Hex('a') }] }, 'keys[0] must have exactly one of "key" and "sha256"');
  rejects({ keys: [{ key: 'a' }, { key: 'b', name: 'bee', limits: { daily: 0 } }] }, 'keys[1] (name "bee") limits.daily must be >= 1');
  rejects({ keys: [{ key: 'a', limits: { dayly: 5 } }] }, 'keys[0] limits has an unknown field "dayly"');
  rejects({ keys: [{ sha256: 'abc' }] }, 'keys[0] sha256 must match pattern');
  rejects({ keys: [{ key: 'a', expires_at: 'tomorrow' }] }, 'keys[0] expires_at must match pattern');
  rejects({ keys: [{ key: 'a' }, { sha256: sha256Hex('a') }] }, 'keys[1] repeats an earlier key');
});

file.run();

const reload = suite<{ t: TestServer }>('keys hot reload');
reload.before(async (ctx) => {
  const snapshot = encodeSnapshot(generateRecords({ records: 100, seed: 1, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.t = await startTestServer({ snapshot, keys: { keys: [{ key: 'first', limits: { per_window: null } }] } });
});
reload.after((ctx) => ctx.t.close());

const status = async (t: TestServer, key: string) => (await t.get(`/api?key=${key}&count=1`)).status;

reload('an edit takes effect without a restart; an invalid file keeps the keys in force', async ({ t }) => {
  assert.is(await status(t, 'first'), 200);
  assert.is(await status(t, 'second'), 401);
  writeFileSync(t.keys, JSON.stringify({ keys: [{ key: 'second', limits: { per_window: null } }] }));
  await eventually(async () => (await status(t, 'second')) === 200, 10_000, 'the new key');
  assert.is(await status(t, 'first'), 401, 'a removed key stops working');

  writeFileAtomic(t.keys, '{"keys": [{"key": "third", "bogus": 1}]}');
  await eventually(() => t.server.keys.lastError !== null, 10_000, 'the rejection');
  assert.match(t.server.keys.lastError!, 'unknown field "bogus"');
  assert.is(await status(t, 'second'), 200);
  assert.is(await status(t, 'third'), 401);
});

reload.run();
