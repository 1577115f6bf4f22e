import { closeSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Packr } from 'msgpackr';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { TEST_NOW_S, eventually, startTestServer, type TestServer, serverSuite } from '../helpers/server.js';
import { health, rejectedKeepsServing, servedVersion, version } from '../helpers/snapshots.js';

const test = suite<{ t: TestServer }>('snapshot reloads');
test.before.each(async (ctx) => {
  // One test counts the hits of one serving thread's cache: one thread.
  ctx.t = await startTestServer({ snapshot: version(0), options: { threads: 1 } });
});
test.after.each((ctx) => ctx.t.close());

test('a corrupt file is rejected and the previous data stays served', async ({ t }) => {
  await rejectedKeepsServing(t, Buffer.from([0xc1, 0xc1, 0xc1, 0x00]), /does not decode as MessagePack/);
  await rejectedKeepsServing(t, Buffer.from([0x81, 0xa1, 0x61, 0xd4]), /truncated/);
  await rejectedKeepsServing(t, Buffer.concat([version(1), Buffer.from([0x00])]), /bytes follow the snapshot/);
});

test('a truncated file is rejected', async ({ t }) => {
  const good = version(1);
  await rejectedKeepsServing(t, good.subarray(0, Math.floor(good.length / 2)), /truncated/);
});

test('wrong version, wrong format and a bad top level are rejected', async ({ t }) => {
  const pack = (doc: unknown): Uint8Array => new Packr({ useRecords: false }).pack(doc);
  await rejectedKeepsServing(t, pack({ format: 'proxylist.snapshot', version: 2, generated_at: 1, proxies: [] }), /version/);
  await rejectedKeepsServing(t, pack({ format: 'other', version: 1, generated_at: 1, proxies: [] }), /format/);
  await rejectedKeepsServing(t, pack({ format: 'proxylist.snapshot', version: 1, generated_at: 1, proxies: {} }), /proxies/);
  await rejectedKeepsServing(t, pack([1, 2, 3]), /top level/);
  await rejectedKeepsServing(t, pack({ format: 'proxylist.snapshot', version: 1, generated_at: 1, services: ['a', 'A'], proxies: [] }), /twice/);
});

test('invalid records are skipped and counted, the rest is served', async ({ t }) => {
  const records: unknown[] = generateRecords({ records: 50, seed: 9, now: TEST_NOW_S });
  const bad = [
    { ...(records[0] as object), ip: '1.2.3' },
    { ...(records[0] as object), port: 0 },
    { ...(records[0] as object), type: 'HTTP' },
    { ...(records[0] as object), ping_ms: -1 },
    { ...(records[0] as object), works: 101 },
    { ...(records[0] as object), services: ['youtube'] },
    'not a map',
  ];
  writeFileAtomic(t.snapshot, encodeSnapshot([...records, ...bad], TEST_NOW_S + 3));
  await eventually(async () => (await servedVersion(t)) === 3, 10_000, 'version 3');
  const h = await health(t);
  assert.is(h.snapshot.skipped, bad.length);
  const ref = new NaiveEngine({ proxies: records });
  assert.is(h.snapshot.records, ref.records.length);
  const body = await (await t.api('time=99999')).text();
  assert.is(body, ref.answer('time=99999', t.clock.nowMs()).body);
  // Why, by reason: each of the seven once.
  const reasons = (h.snapshot as unknown as { skip_reasons: Record<string, number> }).skip_reasons;
  assert.is(Object.values(reasons).reduce((a, b) => a + b, 0), bad.length);
  assert.is(reasons['type is not one of http, https, socks4, socks5'], 1);
  assert.is(reasons['services names an unknown service'], 1);
});

test('a snapshot whose records are mostly invalid (a checker that writes a field wrongly) is rejected whole, and says why', async ({ t }) => {
  const records = generateRecords({ records: 1000, seed: 10, now: TEST_NOW_S });
  await rejectedKeepsServing(t, encodeSnapshot(records.map((r) => ({ ...r, type: 'ftp' })), TEST_NOW_S + 4), /1000 of its 1000 records break the rules, more than 0\.5 of them \(--max-skipped-share\): type is not one of http, https, socks4, socks5 \(1000\)/);
  // Past half skipped: rejected; half exactly: served.
  const half = (n: number): Uint8Array => encodeSnapshot(records.map((r, i) => (i < n ? { ...r, port: 0 } : r)), TEST_NOW_S + 5);
  await rejectedKeepsServing(t, half(501), /501 of its 1000 records break the rules/);
  writeFileAtomic(t.snapshot, half(500));
  await eventually(async () => (await servedVersion(t)) === 5, 10_000, 'half of the records skipped: served');
  assert.is((await health(t)).snapshot.skipped, 500);
});

test('a snapshot with no proxies is served: empty lists, zero counts', async ({ t }) => {
  writeFileAtomic(t.snapshot, encodeSnapshot([], TEST_NOW_S + 7));
  await eventually(async () => (await servedVersion(t)) === 7, 10_000, 'the empty version');
  const h = await health(t);
  assert.is(h.snapshot.records, 0);
  assert.is(h.reloads.last_error, null);
  for (const [query, body] of [['', ''], ['get=json', '[]'], ['get=json&type=socks5&sort=ping&count=5', '[]'], ['port=80&format=object&get=json', '{}']]) {
    const res = await t.api(query);
    assert.is(res.status, 200, query);
    assert.is(await res.text(), body, query);
  }
  const stats = (await (await t.api('get=stats&pretty=0')).json()) as { count: number; country: object };
  assert.is(stats.count, 0);
  assert.equal(stats.country, {});
});

test('a burst of 5 atomic renames 10 ms apart ends with the last version served', async ({ t }) => {
  const versions = [1, 2, 3, 4, 5].map((v) => version(v));
  for (const bytes of versions) {
    writeFileAtomic(t.snapshot, bytes);
    await new Promise((r) => setTimeout(r, 10));
  }
  await eventually(async () => (await servedVersion(t)) === 5, 10_000, 'version 5');
  await new Promise((r) => setTimeout(r, 300));
  assert.is(await servedVersion(t), 5);
});

test('an in-place rewrite is retried until it decodes, and never served half-written', async ({ t }) => {
  const full = version(6, 3000);
  const fd = openSync(t.snapshot, 'r+');
  try {
    // Truncate and write the first half, pause (the server sees a partial file), then the rest.
    writeSync(fd, full, 0, full.length >> 1, 0);
    await new Promise((r) => setTimeout(r, 150));
    writeSync(fd, full, full.length >> 1, full.length - (full.length >> 1), full.length >> 1);
  } finally {
    closeSync(fd);
  }
  await eventually(async () => (await servedVersion(t)) === 6, 10_000, 'version 6');
  const ref = NaiveEngine.fromFile(full);
  assert.is(await (await t.api('time=99999&count=500')).text(), ref.answer('time=99999&count=500', t.clock.nowMs()).body);
});

test('after a swap, a query answered from the cache before gets the new snapshot\'s bytes', async ({ t }) => {
  const query = 'get=json&time=99999&count=50&pretty=0';
  const old = NaiveEngine.fromFile(version(0)).answer(query, t.clock.nowMs()).body;
  const productions = t.server.bodies.productions;
  for (let i = 0; i < 3; i++) assert.is(await (await t.api(query)).text(), old);
  assert.is(t.server.bodies.productions - productions, 1, 'rendered once, then answered from what the first answer kept');
  const next = version(8);
  writeFileAtomic(t.snapshot, next);
  await eventually(async () => (await servedVersion(t)) === 8, 10_000, 'version 8');
  const fresh = NaiveEngine.fromFile(next).answer(query, t.clock.nowMs()).body;
  assert.is.not(fresh, old);
  assert.is(await (await t.api(query)).text(), fresh);
});

test('a deleted file keeps the last store served and /health says so; it comes back when recreated', async ({ t }) => {
  rmSync(t.snapshot);
  await eventually(async () => (await health(t)).reloads.last_error === 'snapshot file is missing', 10_000, 'missing noticed');
  assert.is((await t.api('count=1')).status, 200);
  assert.is(await servedVersion(t), 0);
  writeFileAtomic(t.snapshot, version(7));
  await eventually(async () => (await servedVersion(t)) === 7, 10_000, 'version 7');
  assert.is((await health(t)).reloads.last_error, null);
});

test.run();

const late = serverSuite('a snapshot that does not exist yet', () => ({ snapshot: null }));

late('503 until the file appears, then served', async ({ t }) => {
  assert.is((await t.api('count=1')).status, 503);
  // A checker's publish: write a temp file in the folder, rename over the path.
  const tmp = join(t.dir, 'snapshot.tmp');
  writeFileSync(tmp, version(1));
  renameSync(tmp, t.snapshot);
  await eventually(async () => (await t.api('count=1')).status === 200, 10_000, 'first load');
  assert.is((await health(t)).status, 'ok');
});

late.run();

const traffic = serverSuite('reload under traffic', () => ({ snapshot: version(0, 5000) }));

traffic('10 replacements while a client loops: no failure, every body is one of the versions', async ({ t }) => {
  const query = 'get=json&pretty=0&count=200&fields=ip,type,ping';
  const versions = Array.from({ length: 11 }, (_, v) => version(v, 5000));
  const expected = new Set(versions.map((bytes) => NaiveEngine.fromFile(bytes).answer(query, t.clock.nowMs()).body));
  assert.is(expected.size, 11, 'versions differ');
  let running = true;
  let requests = 0;
  const seen = new Set<string>();
  const client = (async () => {
    while (running) {
      const res = await t.api(query);
      const body = await res.text();
      assert.is(res.status, 200, body);
      assert.ok(expected.has(body), 'a body that belongs to no version');
      seen.add(body);
      requests++;
    }
  })();
  for (let v = 1; v <= 10; v++) {
    writeFileAtomic(t.snapshot, versions[v]);
    await eventually(async () => (await servedVersion(t)) === v, 10_000, `version ${v}`);
  }
  // The loop's request in flight at the last swap may have been answered from the version before.
  await eventually(() => seen.has([...expected][10]), 10_000, 'the last version served to the looping client');
  running = false;
  await client;
  assert.ok(requests > 20, `only ${requests} requests`);
  assert.ok(seen.size >= 3, `only ${seen.size} versions seen by the client`);
});

traffic.run();
