import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { textOrderKey } from '../../src/query/changes.js';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import type { SnapshotRecord } from '../../src/snapshot/format.js';
import { encodeSnapshot, evolveRecords, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine, keyOf } from '../reference/naive-engine.js';
import { assertDocumented } from '../helpers/openapi.js';
import { parseCsv } from '../helpers/csv.js';
import { randomQueries, seeded } from '../helpers/random-queries.js';
import { TEST_KEY, TEST_NOW_S, eventually, serverSuite, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Change sets (docs/api.md, Keeping a list) against the reference, over a
 * generated sequence of snapshots: rows changed, added, removed, and aged
 * out of the window as the clock moves. Every change set must be the
 * reference's bytes, and applied to the cursor's list it must give the list
 * of now, in txt and JSON, with the cache on and off, compressed or not.
 */
const RECORDS = 3000;
const VERSIONS = 5;
/** Seconds between two snapshots: rows leave the narrower windows meanwhile. */
const STEP_S = 40;
const chain: SnapshotRecord[][] = [generateRecords({ records: RECORDS, seed: 31, now: TEST_NOW_S })];
for (let v = 1; v < VERSIONS; v++) chain.push(evolveRecords(chain[v - 1], { seed: 500 + v, share: 0.1, now: TEST_NOW_S + v * STEP_S }));
/**
 * Keys listed twice: in the odd versions, a few records again with an
 * older check and other values (the fresher one is the record), and a few
 * with a fresher check and other values (the new one is).
 */
function withDuplicates(records: SnapshotRecord[], v: number): SnapshotRecord[] {
  if (v % 2 === 0) return records;
  const older = records.slice(0, 40).map((r, i) => ({ ...r, checked_at: r.checked_at - 5, anon: i % 2 ? 'elite' : 'transparent' }) as SnapshotRecord);
  const fresher = records.slice(40, 60).map((r, i) => ({ ...r, checked_at: r.checked_at + 1, works: (r.works + 37 * (i + 1)) % 101 }) as SnapshotRecord);
  return [...older, ...records, ...fresher];
}
const files = chain.map((records, v) => encodeSnapshot(withDuplicates(records, v), TEST_NOW_S + v * STEP_S));
const engines = files.map((f) => NaiveEngine.fromFile(f));

const some = chain[0].filter((_, i) => i % 97 === 3);
const v6 = chain[0].filter((r) => r.ip.includes(':'));
/** An `ip` item with a port: an IPv6 address bracketed. */
const withPort = (r: { ip: string; port: number }): string => (r.ip.includes(':') ? `[${r.ip}]:${r.port}` : `${r.ip}:${r.port}`);

/** A narrow selection on each field a list is filtered by, each one held at every moment. */
const narrow = [
  'type=socks5&anon=elite&time=300', 'get=json&anon=transparent&works=50&pretty=0', `port=${some[0].port},${some[1].port},80`, 'ping=300&works=90&time=99999',
  'get=json&time=120&fields=ip,ping', `get=json&country=${some[2].country},${some[3].country}&time=99999`, `country=${some[4].country}&cm=except&service=telegram&time=99999`,
  `city=${encodeURIComponent(some[5].city?.ru ?? 'Москва')},${encodeURIComponent(some[6].city?.en ?? 'Berlin')}&time=99999`, 'service=smtp,google&type=http,https&time=99999',
  `get=json&ip=${some.slice(0, 12).map((r) => r.ip).join(',')},${withPort(some[13])}&time=99999`,
  'ipv=6&time=99999', 'get=json&ipv=4&type=socks5&time=300', `asn=${some[7].asn ?? 24940},AS${some[8].asn ?? 16276}&time=99999`,
  'hosting=1&time=99999', 'get=json&hosting=0&mobile=1&time=99999', 'mobile=0&type=http&time=300', `get=json&ipv=6&ip=${v6.slice(0, 6).map(withPort).join(',')},${v6[7].ip.toUpperCase()}&time=99999`,
  'get=csv&type=socks5&anon=elite&time=300', `get=csv&hosting=1&fields=ip,asn,org,hosting&time=99999&ip=${some.slice(0, 12).map((r) => r.ip).join(',')}`,
];

/** Whole-list queries: no count, offset or random order, which a cursor never comes with. */
const queries = [
  ...narrow,
  '', 'type_prefix=1', 'get=json', 'get=json&pretty=0&fields=ip,ping,works', 'get=json&split_ip=1&lang=en&format=object', 'get=json.file&wrap=1',
  'type=socks5,http&time=120', 'get=json&anon=elite&time=300&pretty=0', 'port=80,8080&get=txt.file', 'get=json&country=US,DE&cm=except&works=50',
  'get=json&service=telegram&ping=800&sort=ping', `get=json&ip=${chain[0][5].ip},${withPort(chain[0][9])}&time=99999`, 'time=30',
  'get=csv', 'get=csv.file&split_ip=1&lang=en&fields=ip,port,city,org,mobile', 'get=csv&works=50&format=object&wrap=1',
  ...randomQueries(chain[0], 400, 77).filter((q) => !/(^|&)(count|offset|sort=random|get=stats)|get=Stats/i.test(q)).slice(0, 60),
];

interface Held {
  query: string;
  version: number;
  atMs: number;
  cursor: string;
}

const withSince = (q: string, cursor: string): string => `${q}${q ? '&' : ''}since=${cursor}`;

/** What the reference says for a change set asked for now, and the change set applied to the cursor's list. */
function checkChangeSet(q: string, from: Held, version: number, nowMs: number, res: Response, body: string): void {
  const cursor = res.headers.get('list-cursor');
  const reset = res.headers.get('list-reset') === '1';
  assert.ok(cursor, `a List-Cursor on ?${withSince(q, from.cursor)}`);
  const want = engines[version].changeSet(engines[from.version], q, from.atMs, nowMs, cursor!, reset);
  assert.is(res.status, 200, `status of ?${withSince(q, from.cursor)}: ${body}`);
  assert.is(res.headers.get('content-type'), want.contentType);
  if (body !== want.body) assert.fixture(body, want.body, `change set of ?${q} from v${from.version} to v${version}`);
  assert.is(reset, false, 'the history still knows the cursor');

  applies(q, body, engines[from.version], from.atMs, engines[version], nowMs, cursor!, reset);
}

/**
 * Applied to the cursor's list (or, for a reset, to nothing), the change
 * set `body` gives the list of now; nothing is both upserted and removed,
 * and every upsert is in the list of now.
 */
function applies(q: string, body: string, then: NaiveEngine, thenMs: number, now: NaiveEngine, nowMs: number, cursor: string, reset: boolean): void {
  const before = reset ? new Map<string, string>() : listOf(then, q, thenMs);
  const after = listOf(now, q, nowMs);
  if (/get=json/i.test(q)) {
    const set = JSON.parse(body) as { cursor: string; reset: boolean; upsert: Record<string, unknown>; remove: string[] };
    assert.is(set.cursor, cursor);
    for (const k of set.remove) {
      before.delete(k);
      assert.not.ok(k in set.upsert, `${k} both upserted and removed`);
    }
    for (const k of Object.keys(set.upsert)) {
      assert.ok(after.has(k), `upsert ${k} is in the list of now`);
      before.set(k, '');
    }
  } else if (/get=csv/i.test(q)) {
    const [header, ...rows] = parseCsv(body);
    assert.equal(header.slice(0, 2), ['op', 'key']);
    const upserted = new Set<string>();
    for (const [op, key, ...values] of rows) {
      assert.is(values.length, header.length - 2, `row of ${key}: a value per column`);
      if (op === 'upsert') {
        assert.ok(after.has(key), `upsert ${key} is in the list of now`);
        upserted.add(key);
        before.set(key, '');
      } else {
        assert.is(op, 'remove');
        assert.not.ok(upserted.has(key), `${key} both upserted and removed`);
        assert.ok(values.every((v) => v === ''), 'a remove row has empty values');
        before.delete(key);
      }
    }
  } else {
    for (const line of body.split('\n').filter(Boolean)) {
      if (line[0] === '+') before.set(line.slice(1), '');
      else before.delete(line.slice(1));
    }
  }
  assert.equal([...before.keys()].sort(), [...after.keys()].sort(), `L(cursor) with the change set applied is L(now) for ?${q}`);
}

/** The keys a full answer lists (format ignored, as change sets ignore it). */
const listOf = (e: NaiveEngine, q: string, ms: number): Map<string, string> => new Map(e.listed(q, ms).map((r) => [keyOf(r), '']));

for (const cache of [true, false]) {
  const test = serverSuite(`change sets (cache ${cache ? 'on' : 'off'})`, () => ({ snapshot: files[0], options: cache ? {} : { cacheBytes: 0 } }));

  test('every change set from every earlier cursor is the reference\'s, and turns the old list into the new one', async ({ t }) => {
    const held: Held[] = [];
    let compared = 0;
    let nonEmpty = 0;
    let compressed = 0;
    for (let v = 0; v < VERSIONS; v++) {
      if (v > 0) await publish(t, v);
      // Within a snapshot the clock moves too: rows leave the window between cursors.
      for (const stepS of [0, 7]) {
        t.clock.set((TEST_NOW_S + v * STEP_S + stepS) * 1000);
        const nowMs = t.clock.nowMs();
        for (const from of held) {
          const q = from.query;
          const res = await fetch(`${t.base}/api?key=${TEST_KEY}&${withSince(q, from.cursor)}`, { headers: { 'accept-encoding': compared % 3 === 0 ? 'br' : 'identity' } });
          // fetch decodes what it asked to be encoded.
          const body = await res.text();
          if (res.headers.get('content-encoding') === 'br') compressed++;
          checkChangeSet(q, from, v, nowMs, res, body);
          assertDocumented(withSince(q, from.cursor), res, body);
          compared++;
          if (body.length > 150) nonEmpty++;
        }
        const rand = seeded(v * 10 + stepS);
        for (const q of queries) {
          const res = await t.api(q);
          const body = await res.text();
          const cursor = res.headers.get('list-cursor');
          assert.ok(cursor, `a full list carries List-Cursor: ?${q}`);
          assert.match(cursor!, /^[0-9A-Za-z_.-]{1,64}$/);
          assert.is(body, engines[v].answer(`key=x&${q}`, nowMs).body, `full list ?${q}`);
          // Keep every narrow selection's cursor, and a few of the others', of each moment.
          if (narrow.includes(q) || rand() < 0.1) held.push({ query: q, version: v, atMs: nowMs, cursor: cursor! });
        }
      }
    }
    assert.ok(compared > 60, `${compared} change sets compared`);
    assert.ok(nonEmpty > compared / 3, `${nonEmpty} of ${compared} change sets had changes`);
    assert.ok(compressed > 10, `${compressed} change sets came compressed`);
  });

  test.run();
}

async function publish(t: TestServer, v: number): Promise<void> {
  const ok = t.server.feed.reloadsOk;
  writeFileAtomic(t.snapshot, files[v]);
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, `version ${v} to load`);
}

const edges = serverSuite('change sets: resets, errors and cursors', () => ({ snapshot: files[0] }));

edges('a cursor the instance does not know gets a reset: the whole list, marked', async ({ t }) => {
  const first = await t.api('get=json&time=300');
  const cursor = first.headers.get('list-cursor')!;
  await publish(t, 1);
  t.clock.set((TEST_NOW_S + STEP_S) * 1000);
  // Another instance that started on the newer snapshot has never seen the cursor's.
  const other = await startTestServer({ snapshot: files[1], clock: t.clock });
  try {
    for (const q of ['get=json&time=300', 'time=300']) {
      const res = await other.api(withSince(q, cursor));
      const body = await res.text();
      assert.is(res.status, 200, body);
      assert.is(res.headers.get('list-reset'), '1');
      const want = engines[1].changeSet(engines[1], q, 0, t.clock.nowMs(), res.headers.get('list-cursor')!, true);
      assert.is(body, want.body);
    }
    // The same query at the same second, from two instances with the same snapshot: the same cursor.
    const a = (await t.api('get=json&type=socks5')).headers.get('list-cursor');
    const b = (await other.api('get=json&type=socks5')).headers.get('list-cursor');
    assert.is(a, b);
    assert.is(JSON.parse(await (await other.api(withSince('get=json&time=300', cursor))).text()).reset, true);
  } finally {
    await other.close();
  }
});

edges('a cursor since which more keys left than the snapshot holds gets a reset, not a change set larger than the list', async ({ t }) => {
  const cursor = (await t.api('time=99999')).headers.get('list-cursor')!;
  // Two snapshots that share nothing with the one before: every key leaves twice.
  for (const seed of [901, 902]) {
    const ok = t.server.feed.reloadsOk;
    writeFileAtomic(t.snapshot, encodeSnapshot(generateRecords({ records: RECORDS, seed, now: TEST_NOW_S }), TEST_NOW_S + seed));
    await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, `snapshot ${seed}`);
  }
  const res = await t.api(withSince('time=99999', cursor));
  const body = await res.text();
  assert.is(res.headers.get('list-reset'), '1');
  assert.is(body, (await (await t.api('time=99999&type_prefix=1')).text()).replace(/^/gm, '+').replace(/\+$/, ''));
});

edges('errors: a malformed cursor, one for other filters, and parameters a change set cannot have', async ({ t }) => {
  const cursor = (await t.api('type=http&time=300')).headers.get('list-cursor')!;
  // The order of a list's items, and the output, are not the selection.
  assert.is((await t.api(withSince('time=300&type=HTTP&get=json', cursor))).status, 200);
  const cases: Array<[string, RegExp]> = [
    [withSince('type=http&time=300', 'not-a-cursor!'), /^Error: Invalid since "not-a-cursor!"/],
    [withSince('type=http&time=301', cursor), /^Error: The cursor was issued for other filters$/],
    [withSince('type=http', cursor), /^Error: The cursor was issued for other filters$/],
    [withSince('type=http&time=300&count=5', cursor), /^Error: .*since.*count/],
    [withSince('type=http&time=300&offset=1', cursor), /^Error: .*since.*offset/],
    [withSince('type=http&time=300&sort=random', cursor), /^Error: .*since.*sort=random/],
    [withSince('type=http&time=300&get=stats', cursor), /^Error: .*since.*get=stats/],
  ];
  for (const [q, message] of cases) {
    const res = await t.api(q);
    const body = await res.text();
    assert.is(res.status, 400, `?${q}: ${body}`);
    assert.match(body, message);
    assert.is(res.headers.get('cache-control'), 'no-store');
  }
  // Forged cursors: a second after now (past the second of slack between instances' clocks).
  const [gen, second, content, selection] = cursor.split('.');
  const at = (s: number): string => `${gen}.${s.toString(36)}.${content}.${selection}`;
  for (const ahead of [2, 86400]) {
    const c = at(parseInt(second, 36) + ahead);
    const res = await t.api(withSince('type=http&time=300', c));
    const body = await res.text();
    assert.is(res.status, 400, `${c}: ${body}`);
    assert.match(body, new RegExp(`^Error: Invalid since "${c.replace(/\./g, '\\.')}": it names a second after now\n?$`));
  }
  assert.is((await t.api(withSince('type=http&time=300', at(parseInt(second, 36) + 1)))).status, 200, 'a second ahead: another instance\'s clock');
  // Answers that are not a whole list carry no cursor.
  for (const q of ['count=5', 'offset=2', 'sort=random', 'get=stats']) assert.is((await t.api(q)).headers.get('list-cursor'), null, q);
});

edges.run();

const EXACT_S = 60;
const older = serverSuite('change sets: cursors just inside and just outside --history-exact-s', () => ({ snapshot: files[0], options: { historyExactS: EXACT_S } }));

older('inside, the exact difference; outside, a wider change set that still gives the list of now and is never larger than it', async ({ t }) => {
  const cursors: Held[] = [];
  // v0 at 0 s, v1 at 40 s, v2 at 80 s, v3 at 120 s: at 120 s the versions of v1's swap (40 s) are more than 60 s old.
  for (let v = 0; v < 4; v++) {
    if (v > 0) await publish(t, v);
    t.clock.set((TEST_NOW_S + v * STEP_S) * 1000);
    for (const q of narrow) cursors.push({ query: q, version: v, atMs: t.clock.nowMs(), cursor: (await t.api(q)).headers.get('list-cursor')! });
  }
  const nowMs = t.clock.nowMs();
  let wider = 0;
  for (const from of cursors) {
    const q = from.query;
    const res = await t.api(withSince(q, from.cursor));
    const body = await res.text();
    const ageS = (nowMs - from.atMs) / 1000;
    if (ageS <= EXACT_S) {
      checkChangeSet(q, from, 3, nowMs, res, body);
      continue;
    }
    const reset = res.headers.get('list-reset') === '1';
    applies(q, body, engines[from.version], from.atMs, engines[3], nowMs, res.headers.get('list-cursor')!, reset);
    const exact = engines[3].changeSet(engines[from.version], q, from.atMs, nowMs, res.headers.get('list-cursor')!, false);
    const lines = (text: string): number =>
      /get=json/i.test(q) ? ((s) => Object.keys(s.upsert).length + s.remove.length)(JSON.parse(text) as { upsert: object; remove: string[] }) : /get=csv/i.test(q) ? parseCsv(text).length - 1 : text.split('\n').length - 1;
    assert.ok(lines(body) <= Math.max(lines(exact.body), engines[3].listed(q, nowMs).length), `?${q} from ${ageS} s ago: no larger than the whole list`);
    assert.is(/get=json/i.test(q) ? (JSON.parse(body) as { reset: boolean }).reset : reset, reset, 'List-Reset says what the body says');
    if (body !== exact.body) wider++;
  }
  assert.ok(wider > 0, 'some change set from outside the window is wider than exact');
});

older.run();

// The held requests and passes of one serving thread: one thread (threads/serving.test.ts holds them across threads).
const waiting = serverSuite('change sets with wait', () => ({ snapshot: files[0], options: { heldSliceMs: 0, threads: 1 } }));

waiting('a change set with wait is held while it is empty, and answered within a second of the next snapshot', async ({ t }) => {
  const cursor = (await t.api('get=json&pretty=0')).headers.get('list-cursor')!;
  const started = Date.now();
  const pending = fetch(`${t.base}/api?key=${TEST_KEY}&get=json&pretty=0&wait=30&since=${cursor}`);
  const pendingTxt = fetch(`${t.base}/api?key=${TEST_KEY}&wait=30&since=${(await t.api('')).headers.get('list-cursor')}`);
  await eventually(() => t.server.waiters.count === 2, 10_000, 'two held requests');
  await new Promise((r) => setTimeout(r, 300));
  assert.is(t.server.waiters.count, 2, 'still held: nothing changed');
  const loadedAt = Date.now();
  await publish(t, 1);
  const res = await pending;
  const answeredAt = Date.now();
  assert.ok(answeredAt - loadedAt < 1500, `answered ${answeredAt - loadedAt} ms after the publish`);
  assert.ok(answeredAt - started > 300);
  const set = JSON.parse(await res.text()) as { upsert: Record<string, unknown>; remove: string[]; reset: boolean };
  assert.is(set.reset, false);
  assert.ok(Object.keys(set.upsert).length + set.remove.length > 0, 'the change set is not empty');
  assert.ok((await (await pendingTxt).text()).length > 0);

  // Wait running out: 200, the empty change set, and the current cursor.
  const now = (await t.api('get=json&pretty=0')).headers.get('list-cursor')!;
  const t0 = Date.now();
  const empty = await fetch(`${t.base}/api?key=${TEST_KEY}&get=json&pretty=0&wait=1&since=${now}`);
  assert.ok(Date.now() - t0 >= 900, 'held for the wait');
  assert.is(empty.status, 200);
  const emptySet = JSON.parse(await empty.text()) as { cursor: string; upsert: object; remove: string[] };
  assert.equal([emptySet.upsert, emptySet.remove], [{}, []]);
  assert.is(emptySet.cursor, empty.headers.get('list-cursor'));
});

waiting('held change sets of many distinct selections are worked out in slices at a swap, each the reference\'s', async ({ t }) => {
  await publish(t, 2);
  const at = TEST_NOW_S + 2 * STEP_S;
  t.clock.set(at * 1000);
  const queries = Array.from({ length: 200 }, (_, i) => `works=${i % 7}&ping=${200 + i * 13}&time=99999${i % 2 ? '&get=json&pretty=0' : ''}`);
  const cursors = await Promise.all(queries.map(async (q) => (await t.api(q)).headers.get('list-cursor')!));
  const pending = queries.map((q, i) => fetch(`${t.base}/api?key=${TEST_KEY}&${q}&wait=30&since=${cursors[i]}`).then(async (res) => ({ res, body: await res.text() })));
  await eventually(() => t.server.waiters.count === queries.length, 10_000, 'every request held');
  const passes = t.server.waiters.passes;
  const slices = t.server.waiters.passSlices;
  // Every record checked again: every row changed.
  const next = chain[2].map((r) => ({ ...r, checked_at: r.checked_at + 1 }));
  const ok = t.server.feed.reloadsOk;
  writeFileAtomic(t.snapshot, encodeSnapshot(next, at + 1));
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, 'the snapshot to load');
  const answers = await Promise.all(pending);
  const then = NaiveEngine.fromFile(files[2]);
  const now = NaiveEngine.fromFile(encodeSnapshot(next, at + 1));
  answers.forEach(({ res, body }, i) => {
    assert.is(res.status, 200, body);
    assert.is(body, now.changeSet(then, queries[i], at * 1000, t.clock.nowMs(), res.headers.get('list-cursor')!, false).body, `?${queries[i]}`);
  });
  // One group a turn (heldSliceMs 0): the pass that woke them took a turn for each.
  assert.ok(t.server.waiters.passSlices - slices >= queries.length, `${t.server.waiters.passSlices - slices} turns for ${queries.length} groups in ${t.server.waiters.passes - passes} passes`);
});

waiting.run();

const order = suite('change sets: the order of removes');

order('keys given by numbers sort exactly as their texts do', () => {
  const rand = seeded(5);
  const TYPES = ['http', 'https', 'socks4', 'socks5'];
  // Octets and ports of every length, and ones that share prefixes (1, 10, 100, 19, 199).
  const octet = () => [0, 1, 9, 10, 19, 100, 199, 2, 25, 255, 3][Math.floor(rand() * 11)] ?? 0;
  const keys = Array.from({ length: 20_000 }, () => {
    const ip = rand() < 0.5 ? ((octet() << 24) | (octet() << 16) | (octet() << 8) | octet()) >>> 0 : Math.floor(rand() * 2 ** 32);
    const port = rand() < 0.5 ? [1, 8, 80, 8080, 808, 65535, 6553, 9][Math.floor(rand() * 8)] : 1 + Math.floor(rand() * 65535);
    const type = Math.floor(rand() * 4);
    return { text: `${TYPES[type]}://${ip >>> 24}.${(ip >>> 16) & 255}.${(ip >>> 8) & 255}.${ip & 255}:${port}`, order: textOrderKey(type, ip, port) };
  });
  const byText = [...keys].sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0)).map((k) => k.text);
  const byNumber = [...keys].sort((a, b) => a.order - b.order).map((k) => k.text);
  assert.equal(byNumber, byText);
});

order.run();
