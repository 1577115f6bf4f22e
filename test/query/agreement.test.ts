import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { assertDocumented } from '../helpers/openapi.js';
import { randomQueries } from '../helpers/random-queries.js';
import { TEST_KEY, TEST_NOW_S, serverSuite } from '../helpers/server.js';

/**
 * The bitset engine, over HTTP, against the naive reference: byte for byte on
 * thousands of generated queries, with the clock frozen so `time` is exact.
 */
const RECORDS = 20_000;
const QUERIES = 2_500;
const records = generateRecords({ records: RECORDS, seed: 7, now: TEST_NOW_S });
// Also a record at the very edge of the default window, and exact ties.
records.push({ ...records[0], ip: '203.0.113.7', port: 8080, checked_at: TEST_NOW_S - 600 });
records.push({ ...records[0], ip: '203.0.113.8', port: 8080, checked_at: TEST_NOW_S - 601 });
// A tenth listen on IPv6 (the generator gives a twentieth), written in every form a checker may: upper case, in full,
// with a dotted tail, IPv4-mapped; addresses shared between records in different forms, so only their values match.
const V6_FORMS = [
  (a: number, _b: string) => `2001:DB8:0:${a.toString(16)}:0:0:0:1`,
  (a: number, _b: string) => `2001:0db8:0000:${a.toString(16).padStart(4, '0')}:0000:0000:0000:0001`,
  (a: number, _b: string) => `2001:db8:0:${a.toString(16)}::1`,
  (a: number, b: string) => `2001:db8::${a.toString(16)}:${b}`,
  (_: number, b: string) => `::ffff:${b}`,
];
let rewritten = 0;
records.forEach((r, i) => {
  if (i % 14 === 7 && !r.ip.includes(':')) r.ip = V6_FORMS[rewritten++ % V6_FORMS.length](i % 40, r.ip);
});
// Texts CSV must quote: a comma, double quotes, a line break.
records.forEach((r, i) => {
  if (i % 53 !== 11) return;
  r.city = { ru: 'Вашингтон, округ Колумбия', en: 'Washington, "D.C."' };
  r.org = i % 2 === 0 ? 'Example\r\nNet, "Ltd"' : 'Plain "Quoted" Org';
});
const v6Share = records.filter((r) => r.ip.includes(':') && !r.ip.startsWith('::ffff:')).length / records.length;
const snapshot = encodeSnapshot(records, TEST_NOW_S);
const reference = NaiveEngine.fromFile(snapshot);
const queries = randomQueries(records, QUERIES, 42);
// The reference is slow by design: answer each query once for both suites.
const expected = new Map<string, ReturnType<NaiveEngine['answer']>>();
const referenceAnswer = (q: string, nowMs: number) => {
  let a = expected.get(q);
  if (!a) expected.set(q, (a = reference.answer(`key=x&${q}`, nowMs)));
  return a;
};

for (const cache of [true, false]) {
  const test = serverSuite(`agreement (cache ${cache ? 'on' : 'off'})`, () => ({ snapshot, options: cache ? {} : { cacheBytes: 0 } }));

  test(`${QUERIES} generated queries give the reference's bytes and headers, as the OpenAPI document describes them`, async ({ t }) => {
    assert.ok(v6Share >= 0.1, `a tenth of the records listen on IPv6: ${v6Share}`);
    const nowMs = t.clock.nowMs();
    let nonEmpty = 0;
    for (const q of queries) {
      const res = await t.api(q);
      const body = await res.text();
      const want = referenceAnswer(q, nowMs);
      assert.is(res.status, want.status, `status of ?${q}\n${body}`);
      assert.is(res.headers.get('content-type'), want.contentType, `content-type of ?${q}`);
      assert.is(res.headers.get('content-disposition'), want.disposition, `content-disposition of ?${q}`);
      assert.is(res.headers.get('cache-control'), 'private, no-cache');
      assert.is(res.headers.get('vary'), 'Accept-Encoding');
      if (body !== want.body) assert.fixture(body, want.body, `body of ?${q}`);
      assertDocumented(q, res, body);
      if (want.body.length > 4) nonEmpty++;
    }
    // At least 1,000 of them use the client extensions (docs/api.md), mixed with the rest.
    const extended = queries.filter((q) => /(^|&)(port|sort|offset)=|get=stats/i.test(q)).length;
    assert.ok(extended >= 1000, `${extended} queries use port, sort, offset or stats`);
    // And CSV, whole lists of every kind.
    const csv = queries.filter((q) => /(^|&)get=csv/i.test(q)).length;
    assert.ok(csv >= 300, `${csv} queries ask for CSV`);
    // The generator must exercise both matches and no-matches.
    assert.ok(nonEmpty > QUERIES / 2, `only ${nonEmpty} queries matched anything`);
    assert.ok(nonEmpty < QUERIES, 'no query was a no-match');
  });

  test('the default window includes age 600 s and excludes 601 s', async ({ t }) => {
    const body = await (await t.api('get=json&ip=203.0.113.7,203.0.113.8&fields=ip&pretty=0')).text();
    assert.is(body, '[{"ip":"203.0.113.7:8080"}]');
  });

  test.run();
}

// Counts the cache hits of one serving thread: one thread.
const moving = serverSuite('agreement while the window moves (cache on)', () => ({ snapshot, options: { threads: 1 } }));

moving('second by second, with jumps and a clock set back, cached and narrowed bodies stay exact', async ({ t }) => {
  const city = records.find((r) => r.city?.en)!.city!.en!;
  const watched = [
    '', 'type_prefix=1', 'type=http,socks5&count=40',
    'get=json', 'get=json&pretty=0&fields=ip,ping,city', 'get=json&format=object&pretty=0', 'get=json&split_ip=1&count=25&anon=elite',
    `get=json&city=${encodeURIComponent(city)}&lang=en`, 'get=json&wrap=1&pretty=0&count=30', 'get=json&time=120&pretty=0', 'get=json.file&works=50',
    'get=csv', 'get=csv&time=120&fields=ip,city,org,hosting&lang=en', 'get=csv.file&split_ip=1&count=30',
    'offset=50&count=40', 'get=json&offset=10&time=120&pretty=0', 'get=stats', 'get=stats&type=socks5&time=120&pretty=0', 'get=json&sort=ping&count=30&pretty=0', 'sort=works&offset=5&count=20&port=80,8080,3128',
  ];
  const steps = [...Array(20).fill(1000), 45_000, 1000, 300_000, 1000, -400_000, 1000, 1000, 200_000];
  let narrowed = 0;
  for (const step of steps) {
    if (step < 0) t.clock.set(t.clock.nowMs() + step);
    else t.clock.advance(step);
    for (const q of watched) {
      const hits = t.server.bodies.cacheHits;
      const res = await t.api(q);
      const body = await res.text();
      const want = reference.answer(`key=x&${q}`, t.clock.nowMs()).body;
      if (body !== want) assert.fixture(body, want, `?${q} at +${t.clock.nowMs() / 1000 - TEST_NOW_S} s`);
      assertDocumented(q, res, body);
      if (t.server.bodies.cacheHits > hits) narrowed++;
    }
  }
  // Most answers after the first round came from a cached body, whole or narrowed.
  assert.ok(narrowed > steps.length * watched.length * 0.6, `${narrowed} answers from the cache`);
});

moving.run();

/**
 * Bodies of tens of megabytes, from a store of 65,000 records: the pretty
 * JSON ones, and CSV, are written in chunks with the cache off.
 */
const bigSnapshot = encodeSnapshot(generateRecords({ records: 65_000, seed: 23, now: TEST_NOW_S }), TEST_NOW_S);
const big = NaiveEngine.fromFile(bigSnapshot);
for (const cache of [true, false]) {
  const test = serverSuite(`agreement of whole-store bodies (cache ${cache ? 'on' : 'off'})`, () => ({ snapshot: bigSnapshot, options: cache ? {} : { cacheBytes: 0 } }));

  test('GET gives the reference\'s bytes, and HEAD their length', async ({ t }) => {
    const nowMs = t.clock.nowMs();
    for (const q of [
      'time=99999', 'time=99999&type_prefix=1', 'time=99999&type=socks4,socks5', 'get=json&time=99999', 'get=json&time=99999&format=object&lang=en',
      'get=json&time=99999&fields=ip,port,city&split_ip=1&pretty=0', 'get=json&time=99999&works=50&service=telegram', 'get=json&time=99999&wrap=1',
      'get=csv&time=99999', 'get=csv&time=99999&fields=ip,port,asn,org,hosting,mobile,city&split_ip=1&lang=en',
    ]) {
      const want = big.answer(`key=x&${q}`, nowMs);
      const res = await t.api(q);
      const body = await res.text();
      if (body !== want.body) assert.fixture(body, want.body, `body of ?${q}`);
      assertDocumented(q, res, body);
      const head = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } });
      assert.is(head.headers.get('content-length'), String(Buffer.byteLength(want.body)), `HEAD of ?${q}`);
    }
  });

  test.run();
}
