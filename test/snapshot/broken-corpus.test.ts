import { closeSync, openSync, writeSync } from 'node:fs';
import { Packr } from 'msgpackr';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { seeded } from '../helpers/random-queries.js';
import { TEST_NOW_S, eventually, serverSuite } from '../helpers/server.js';
import { health, rejectedKeepsServing, servedVersion, version } from '../helpers/snapshots.js';

/**
 * A corpus of broken snapshot files, published to a running server one by
 * one: a file is either rejected whole with a short reason while the good
 * store keeps answering the same bytes, or loaded with exactly the records
 * the reference finds valid.
 */
const packr = new Packr({ useRecords: false });
const top = (fields: Record<string, unknown>): Record<string, unknown> =>
  ({ format: 'proxylist.snapshot', version: 1, generated_at: TEST_NOW_S + 1, proxies: [], ...fields });
/** A map written by hand: entries are [key, encoded value], so values may be raw bytes. */
const rawMap = (entries: Array<[string, Uint8Array]>): Buffer =>
  Buffer.concat([Buffer.from([0xde, entries.length >> 8, entries.length & 255]), ...entries.flatMap(([k, v]) => [packr.pack(k), v])]);
const nested = (depth: number): Buffer => Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0xc0])]);
const topEntries = (fields: Record<string, unknown>): Array<[string, Uint8Array]> =>
  Object.entries(top(fields)).map(([k, v]) => [k, packr.pack(v)]);
const BIG = 'x'.repeat(50 * 1024 * 1024);

const WRONG_VALUES: unknown[] = [null, true, -1, 1.5, 2 ** 40, 'text', '', new Uint8Array([1, 2]), [], [1], {}, { ru: 1 }, NaN, Infinity, -Infinity];
const FIELDS = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping_ms', 'checked_at', 'country', 'city', 'works', 'services', 'asn', 'org', 'hosting', 'mobile'];

const test = serverSuite('broken snapshots', () => ({ snapshot: version(0) }));

test('empty, truncated at 20 random offsets, or with a record count the file cannot hold: rejected', async ({ t }) => {
  await rejectedKeepsServing(t, new Uint8Array(0), /empty/);
  const good = version(1, 2000);
  const rand = seeded(11);
  for (let i = 0; i < 20; i++) {
    const cut = 1 + Math.floor(rand() * (good.length - 1));
    await rejectedKeepsServing(t, good.subarray(0, cut), /truncated/);
  }
  const countOnly = rawMap([...topEntries({}).filter(([k]) => k !== 'proxies'), ['proxies', Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff])]]);
  await rejectedKeepsServing(t, countOnly, /truncated/);
});

test('wrong MessagePack types at every top-level field: rejected', async ({ t }) => {
  const wrong: Array<[string, unknown[]]> = [
    ['format', WRONG_VALUES.concat(['proxylist.snapshoT'])],
    ['version', WRONG_VALUES.concat([2, 0])],
    ['generated_at', WRONG_VALUES.filter((v) => v !== 2 ** 40)],
    ['services', [true, -1, 1.5, 'smtp', '', new Uint8Array([1]), {}, [1], [''], ['a', 'a'], [['smtp']], Array.from({ length: 33 }, (_, i) => `s${i}`)]],
    ['proxies', [true, -1, 1.5, 'text', new Uint8Array([1]), {}, { 0: {} }]],
  ];
  for (const [field, values] of wrong) {
    for (const value of values) await rejectedKeepsServing(t, packr.pack(top({ [field]: value })), new RegExp(field));
  }
  await rejectedKeepsServing(t, packr.pack([top({})]), /top level must be a map/);
  const { proxies: _, ...noProxies } = top({});
  await rejectedKeepsServing(t, packr.pack(noProxies), /proxies/);
});

test('deeply nested garbage: rejected where it stands for a known field, ignored where unknown', async ({ t }) => {
  await rejectedKeepsServing(t, nested(200_000), /top level must be a map/);
  await rejectedKeepsServing(t, rawMap([...topEntries({}), ['services', nested(200_000)]]), /nests values too deeply/);
  const proxies = generateRecords({ records: 20, seed: 3, now: TEST_NOW_S });
  const records = Buffer.concat([Buffer.from([0xdc, 0, proxies.length + 2]), ...proxies.map((r) => packr.pack(r)), nested(200_000),
    rawMap([...Object.entries(proxies[0]).map(([k, v]): [string, Uint8Array] => [k, packr.pack(k === 'ip' ? '203.0.113.9' : v)]), ['junk', nested(200_000)]])]);
  const accepted = rawMap([...topEntries({ generated_at: TEST_NOW_S + 2 }).filter(([k]) => k !== 'proxies'), ['junk', nested(200_000)], ['proxies', records]]);
  writeFileAtomic(t.snapshot, accepted);
  await eventually(async () => (await servedVersion(t)) === 2, 10_000, 'the nested-but-valid file');
  const h = await health(t);
  assert.is(h.snapshot.skipped, 1);
  assert.is(h.snapshot.records, new NaiveEngine({ proxies }).records.length + 1);
});

test('a 50 MB string: rejected as the format, skipped as an ip, ignored under an unknown key', async ({ t }) => {
  writeFileAtomic(t.snapshot, version(0));
  await eventually(async () => (await servedVersion(t)) === 0, 10_000, 'version 0 again');
  await rejectedKeepsServing(t, packr.pack(top({ format: BIG })), /format/);
  const proxies = generateRecords({ records: 20, seed: 4, now: TEST_NOW_S });
  const withBig = [...proxies, { ...proxies[0], ip: BIG }, { ...proxies[1], ip: '203.0.113.10', note: BIG }];
  writeFileAtomic(t.snapshot, packr.pack(top({ generated_at: TEST_NOW_S + 3, junk: BIG, proxies: withBig })));
  await eventually(async () => (await servedVersion(t)) === 3, 20_000, 'the file with 50 MB strings');
  const h = await health(t);
  assert.is(h.snapshot.skipped, 1);
  assert.is(h.snapshot.records, new NaiveEngine({ proxies }).records.length + 1);
  const body = await (await t.api('get=json&pretty=0&time=99999&ip=203.0.113.10&fields=ip')).text();
  assert.is(body, `[{"ip":"203.0.113.10:${proxies[1].port}"}]`);
});

test('wrong types at every record field, NaN and Infinity pings, unknown services: those records skipped, the rest as the reference', async ({ t }) => {
  const base = generateRecords({ records: 200, seed: 5, now: TEST_NOW_S });
  const broken: unknown[] = [];
  let n = 0;
  for (const field of FIELDS) {
    for (const value of WRONG_VALUES) {
      n++;
      broken.push({ ...base[n % base.length], ip: field === 'ip' ? value : `198.18.${n >> 8}.${n & 255}`, [field]: value });
    }
  }
  broken.push({ ...base[0], ip: '198.19.0.1', services: ['smtp', 'nope'] }, { ...base[1], ip: '198.19.0.2', services: ['SMTP'] });
  const proxies = [...base, ...broken];
  writeFileAtomic(t.snapshot, encodeSnapshot(proxies, TEST_NOW_S + 4));
  await eventually(async () => (await servedVersion(t)) === 4, 10_000, 'the file with broken records');
  const reference = new NaiveEngine({ proxies });
  const h = await health(t);
  assert.is(h.snapshot.records, reference.records.length);
  assert.is(h.snapshot.skipped, proxies.length - reference.records.length - (base.length - new NaiveEngine({ proxies: base }).records.length));
  assert.ok(h.snapshot.skipped > broken.length * 0.7, `${h.snapshot.skipped} of ${broken.length} broken records skipped`);
  for (const q of ['time=99999', 'get=json&time=99999&pretty=0', 'get=json&time=99999&format=object&fields=ip,ping,city,smtp']) {
    assert.is(await (await t.api(q)).text(), reference.answer(q, t.clock.nowMs()).body, q);
  }
});

test('a snapshot replaced or rewritten while it is read: the newest version wins, never a mixture', async ({ t }) => {
  const big = version(5, 300_000);
  const failed = (await health(t)).reloads.failed;
  const seen = new Set<number>();
  const watch = setInterval(() => void servedVersion(t).then((v) => seen.add(v)), 20);
  try {
    // Renamed over while the big version is being read.
    writeFileAtomic(t.snapshot, big);
    await new Promise((r) => setTimeout(r, 60));
    writeFileAtomic(t.snapshot, version(6));
    await eventually(async () => (await servedVersion(t)) === 6, 20_000, 'version 6');
    // A read that a rename overtook is dropped, not counted as a failure.
    assert.is((await health(t)).reloads.failed, failed);
    // Rewritten in place: truncated, then written in pieces while the server reads.
    const fd = openSync(t.snapshot, 'w');
    try {
      for (let at = 0; at < big.length; at += 1 << 20) {
        writeSync(fd, big, at, Math.min(1 << 20, big.length - at), at);
        if (at % (8 << 20) === 0) await new Promise((r) => setTimeout(r, 40));
      }
    } finally {
      closeSync(fd);
    }
    await eventually(async () => (await servedVersion(t)) === 5, 30_000, 'version 5');
  } finally {
    clearInterval(watch);
  }
  for (const v of seen) assert.ok([4, 5, 6].includes(v), `served version ${v}`);
  const reference = NaiveEngine.fromFile(big);
  assert.is(await (await t.api('count=100')).text(), reference.answer('count=100', t.clock.nowMs()).body);
});

test.run();

const many = serverSuite('a snapshot of 2 million records', () => ({ snapshot: version(0) }));

many('loads whole and answers; the next small version replaces it', async ({ t }) => {
  // One record encoded once, its ip ("10.1xx.1xx.1xx", fixed width) and port patched per copy.
  const record = { ip: '10.100.100.100', port: 8080, type: 'http', anon: 'elite', ping_ms: 100, checked_at: TEST_NOW_S - 10, country: 'US', works: 90 };
  const one = packr.pack(record);
  const ipAt = one.indexOf('10.100.100.100');
  const portAt = one.indexOf(Buffer.from([0xcd, 8080 >> 8, 8080 & 255])) + 1;
  assert.ok(ipAt > 0 && portAt > 0);
  const COUNT = 2_000_000;
  const body = Buffer.alloc(one.length * COUNT);
  for (let i = 0; i < COUNT; i++) {
    const at = i * one.length;
    one.copy(body, at);
    const n = i >> 1;
    body.write(`${100 + ((n / 10_000) | 0)}.${100 + (((n / 100) | 0) % 100)}.${100 + (n % 100)}`, at + ipAt + 3, 'latin1');
    body[at + portAt + 1] = (8080 + (i & 1)) & 255;
  }
  const head = topEntries({ generated_at: TEST_NOW_S + 9 }).filter(([k]) => k !== 'proxies');
  writeFileAtomic(t.snapshot, Buffer.concat([rawMap([...head, ['proxies', Buffer.from([0xdd, 0, COUNT >> 16, (COUNT >> 8) & 255, COUNT & 255])]]), body]));
  await eventually(async () => (await servedVersion(t)) === 9, 60_000, 'the 2M snapshot');
  const h = await health(t);
  assert.is(h.snapshot.records, COUNT);
  assert.is(h.snapshot.skipped, 0);
  assert.is(await (await t.api('get=json&pretty=0&fields=ip&ip=10.199.199.199&format=array')).text(), '[{"ip":"10.199.199.199:8080"},{"ip":"10.199.199.199:8081"}]');
  writeFileAtomic(t.snapshot, version(1));
  await eventually(async () => (await servedVersion(t)) === 1, 10_000, 'version 1');
});

many.run();
