import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS, KeyTable, parseKeys, sha256Hex, type KeysData } from '../../src/access/keys.js';
import { keysOf, readKeysFile } from '../../src/access/keys-file.js';
import { NO_SLICES } from '../../src/core/slices.js';
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

file('every digest is found however far its prefix falls from its share of the keys, and none that is not there', () => {
  // Bunched at both ends and in a run of equal prefixes: the search starts at the share and must widen well past it.
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
  const tail = (i: number) => sha256Hex(`tail-${i}`).slice(8);
  const prefixes = [
    ...Array.from({ length: 300 }, (_, i) => i * 3),
    ...Array.from({ length: 300 }, (_, i) => 0xffffffff - i * 3),
    ...Array.from({ length: 40 }, () => 0x80000000),
    0x40000000, 0xc0000000,
  ];
  const ids = prefixes.map((p, i) => hex(p) + tail(i));
  const t = parse({ keys: ids.map((sha256, i) => ({ sha256, name: `k${i}` })) });
  ids.forEach((id, i) => assert.is(t.get(id)?.name, `k${i}`, id));
  for (const p of [1, 2, 0xfffffffd, 0xfffffffe, 0x7fffffff, 0x80000001, 0x12345678, 0xbfffffff]) assert.is(t.get(hex(p) + tail(0)), undefined, hex(p));
  assert.is(t.get(hex(0x80000000) + '0'.repeat(56)), undefined, 'the run of equal prefixes, another digest');
  assert.is(t.get('0'.repeat(64) + '0'), undefined, 'not 64 hex digits');
  const wide = parse({ keys: [{ key: 'ключ-🔑', name: 'wide' }, { key: 'plain' }] });
  for (let i = 0; i < 3; i++) assert.is(wide.find('ключ-🔑', Date.parse('2026-11-22T00:00:00Z'))?.label, 'wide', 'found by its hash each time');
  const one = parse({ keys: [{ key: 'only' }] });
  assert.is(one.find('only', Date.parse('2026-11-22T00:00:00Z'))?.id, sha256Hex('only'));
  assert.is(one.find('other', Date.parse('2026-11-22T00:00:00Z')), null);
});

file('each key keeps its own limits, however many different ones a file gives', () => {
  const now = Date.parse('2026-11-22T00:00:00Z');
  // The common shapes: all the same; two kinds interleaved.
  const same = parse({ keys: Array.from({ length: 50 }, (_, i) => ({ key: `s${i}` })) });
  assert.ok(same.data.sameLimits);
  assert.equal(same.find('s49', now)?.limits, DEFAULT_LIMITS);
  const two = parse({ keys: Array.from({ length: 50 }, (_, i) => ({ key: `t${i}`, ...(i % 2 ? { limits: { per_window: null, window_s: 60 } } : {}) })) });
  assert.not.ok(two.data.sameLimits);
  assert.is(two.data.classLimits.length, 8);
  for (let i = 0; i < 50; i++) assert.is(two.find(`t${i}`, now)?.limits.perWindow, i % 2 ? null : 2, `t${i}`);
  assert.is(two.longestWindowS, 60);
  // More classes than two bytes can number: every key its own daily limit.
  const n = 70_000;
  const many = parse({ keys: Array.from({ length: n }, (_, i) => ({ key: `m${i}`, limits: { daily: i + 1 } })) });
  assert.ok(many.data.limitClass instanceof Uint32Array);
  for (const i of [0, 1, 65_535, 65_536, 65_537, n - 1]) assert.is(many.find(`m${i}`, now)?.limits.daily, i + 1, `m${i}`);
  assert.ok(two.find('t1', now)!.limits === two.find('t3', now)!.limits, 'one object per class');
  assert.ok(two.find('t0', now)!.limits !== two.find('t3', now)!.limits);
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

file('a reload is read only on idle cores, and read again at background priority when they stay busy too long', async () => {
  const path = join(tempDir(), 'keys.json');
  writeFileSync(path, JSON.stringify({ keys: Array.from({ length: 2000 }, (_, i) => ({ key: `key-${i}`, limits: { daily: i + 1 } })) }));
  const first = await readKeysOffThread(path);
  assert.is(first.idle, false, 'the first read has no keys in force to answer with: it does not wait for idle cores');
  const reload = await readKeysOffThread(path, true);
  // Linux's idle policy, set by util-linux's chrt, which the machines the service runs on have.
  assert.is(reload.idle, existsSync('/proc/thread-self'), 'a reload takes the idle policy on Linux');
  assert.is(new KeyTable(reload.data).find('key-1999', Date.now())?.limits.daily, 2000);
  assert.is(reload.reads, 1);
  // Cores busy beyond the limit (here none at all): the idle read is stopped and the file read again.
  const late = await readKeysOffThread(path, true, 0);
  assert.is(late.idle, false);
  assert.is(late.reads, existsSync('/proc/thread-self') ? 2 : 1);
  assert.is(new KeyTable(late.data).find('key-1999', Date.now())?.limits.daily, 2000);
  // Where the policy cannot be had (no chrt to set it), the read is gentle from the start and never thrown away, whatever the limit.
  const path0 = process.env.PATH;
  process.env.PATH = tempDir();
  try {
    const gentle = await readKeysOffThread(path, true, 0);
    assert.equal([gentle.idle, gentle.reads], [false, 1]);
    assert.is(new KeyTable(gentle.data).find('key-1999', Date.now())?.limits.daily, 2000);
  } finally {
    process.env.PATH = path0;
  }
});

file('read on its thread, a keys table arrives in shared memory: a serving thread handed it reads the same bytes, not a copy', async () => {
  const path = join(tempDir(), 'keys.json');
  writeFileSync(path, JSON.stringify({ keys: Array.from({ length: 300 }, (_, i) => ({ key: `key-${i}`, name: `name ${i}`, limits: { daily: i + 1 } })) }));
  const { data } = await readKeysOffThread(path);
  const arrays = [data.ids, data.expires, data.limitClass, data.classLimits, data.flags, data.nameOffsets, data.names, data.positions];
  assert.ok(arrays.every((a) => a.buffer instanceof SharedArrayBuffer), 'every array in shared memory');
  assert.is(new KeyTable(data).find('key-7', Date.now())?.limits.daily, 8);
  // A message carries it as it carries it to a serving thread: a change seen through one is seen through the other.
  const { port1, port2 } = new MessageChannel();
  const handed = await new Promise<KeysData>((resolve) => {
    port2.once('message', resolve);
    port1.postMessage(data);
  });
  port1.close();
  handed.classLimits[0] = 12345;
  assert.is(data.classLimits[0], 12345);
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

/** What the keys thread reads from `text`, and how many times it could have paused. */
const readInSlices = (text: string): { data: KeysData; ticks: number } => {
  const path = join(tempDir(), 'keys.json');
  writeFileSync(path, text);
  let ticks = 0;
  return { data: readKeysFile(path, { tick: () => ticks++ }), ticks };
};
const sameData = (a: KeysData, b: KeysData, what: string) => {
  for (const [name, value] of Object.entries(a)) {
    const other = (b as unknown as Record<string, unknown>)[name];
    if (ArrayBuffer.isView(value)) assert.ok(Buffer.from(value.buffer, value.byteOffset, value.byteLength).equals(Buffer.from((other as Uint8Array).buffer, (other as Uint8Array).byteOffset, (other as Uint8Array).byteLength)), `${what}: ${name}`);
    else assert.is(other, value, `${what}: ${name}`);
  }
};
const rejectsAlike = (text: string, what: string) => {
  let expected = '';
  try {
    parseKeys(text);
  } catch (err) {
    expected = (err as Error).message;
  }
  assert.ok(expected !== '', `${what}: parseKeys accepts it`);
  try {
    readInSlices(text);
  } catch (err) {
    assert.is((err as Error).message, expected, what);
    return;
  }
  assert.unreachable(`${what}: read in slices, accepted`);
};

file('read in slices, a file gives the same table as parsed whole, and a wrong file the same error', () => {
  // Entries of every kind, with names that hold quotes, backslashes, brackets, commas and non-ASCII, over many batches.
  const entries = Array.from({ length: 4000 }, (_, i) => ({
    ...(i % 3 === 0 ? { sha256: (i % 2 ? sha256Hex(`k${i}`).toUpperCase() : sha256Hex(`k${i}`)) } : { key: `k${i}` }),
    ...(i % 5 === 0 ? { name: `n "${i} {[, ключ ${i} \\` } : {}),
    ...(i % 7 === 0 ? { disabled: i % 2 === 0 } : {}),
    ...(i % 11 === 0 ? { expires_at: `2027-0${1 + (i % 9)}-01T00:00:00Z` } : {}),
    ...(i % 13 === 0 ? { limits: { per_window: i % 2 ? null : 3, daily: 100 + i } } : {}),
  }));
  // Read a batch at a time (a chance to pause at each entry), or, for a file of another shape, whole.
  for (const [what, text, batched] of [
    ['compact', JSON.stringify({ keys: entries }), true],
    ['indented', JSON.stringify({ keys: entries }, null, 2), true],
    ['empty', ' { "keys" : [ \n ] } \n', true],
    ['one', '{"keys":[{"key":"only"}]}', true],
    ['the same limits', JSON.stringify({ keys: entries.map((e, i) => ({ key: `same-${i}`, ...(e.name ? { name: e.name } : {}) })) }), true],
    ['keys twice: the last counts', JSON.stringify({ keys: entries }).slice(0, -1) + ',"keys":[{"key":"later"}]}', false],
    ['a name written with escapes', JSON.stringify({ keys: entries }).replace('"keys"', '"\\u006beys"'), false],
  ] as const) {
    const { data, ticks } = readInSlices(text);
    sameData(data, parseKeys(text), what);
    assert.is(keysOf(Buffer.from(text), NO_SLICES) !== null, batched, `${what}: read a batch at a time`);
    if (batched) assert.ok(ticks >= data.count, `${what}: ${ticks} chances to pause for ${data.count} keys`);
  }
  const compact = JSON.stringify({ keys: entries });
  const at = (n: number) => compact.indexOf(`"k${n}"`);
  rejectsAlike(compact.slice(0, -2) + ',]}', 'a comma after the last entry');
  rejectsAlike(compact.replace('"k3999"}', '"k3999"},]}').slice(0, -2), 'a comma before the end');
  rejectsAlike(compact.slice(0, at(2500)) + '"k2500", "bogus": 1' + compact.slice(at(2500) + '"k2500"'.length), 'an unknown field deep in the file');
  rejectsAlike(compact.replace('"k3998"', '"k1"'), 'a key repeated at the end');
  rejectsAlike(compact.replace('"k2"', '"k3997"').replace('2027-04-01T00:00:00Z', '2027-13-45T00:00:00Z'), 'a repeat and a date that is none: the first in the file wins');
  rejectsAlike(compact.slice(0, -1) + ',"other":1}', 'another field after the keys');
  rejectsAlike('\ufeff' + compact, 'a byte order mark');
  rejectsAlike('{"keys":[\u00a0]}', 'a space that JSON does not know');
  rejectsAlike(compact.slice(0, at(1234)) + '"k1234}' + compact.slice(at(1234) + 7), 'a quote missing');
  rejectsAlike(compact.slice(0, at(3000) - 7) + ']' + compact.slice(at(3000) - 7), 'an array closed early');
  rejectsAlike(compact + 'x', 'text after the end');
  rejectsAlike(compact.slice(0, -3), 'cut short');
});

file.run();

const reload = suite<{ t: TestServer }>('keys hot reload');
reload.before(async (ctx) => {
  const snapshot = encodeSnapshot(generateRecords({ records: 100, seed: 1, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.t = await startTestServer({ snapshot, keys: { keys: [{ key: 'first', limits: { per_window: null } }] } });
});
reload.after((ctx) => ctx.t?.close());

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
