import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot } from '../../src/snapshot/generate.js';
import { parseCsv } from '../helpers/csv.js';
import { TEST_KEY, TEST_NOW_S, eventually, serverSuite } from '../helpers/server.js';

/**
 * CSV for people's tools (docs/api.md, CSV): RFC 4180 with a header row and
 * CRLF, JSON's fields as columns, quoting where a value needs it, unknown
 * values empty; the same validators, compression, wait and change sets as
 * the other lists.
 */
const base = { type: 'http', anon: 'elite', checked_at: TEST_NOW_S - 10, country: 'us', works: 90, services: ['telegram'] };
const records = [
  { ...base, ip: '198.51.100.1', port: 8080, ping_ms: 120, city: { ru: 'Вашингтон, округ Колумбия', en: 'Washington, "D.C."' }, asn: 64500, org: 'Example\r\nNet, "Ltd"', hosting: true, mobile: false },
  { ...base, ip: '198.51.100.2', port: 3128, ping_ms: 1500.4, type: 'socks5', ip_out: '203.0.113.9', city: { ru: 'Берлин', en: 'Berlin' }, hosting: false },
  { ...base, ip: '2001:db8::7', port: 1080, ping_ms: 80, checked_at: TEST_NOW_S - 20, country: 'de', services: [] },
];
const snapshot = encodeSnapshot(records, TEST_NOW_S);
const CSV_TYPE = 'text/csv; charset=utf-8; header=present';

const test = serverSuite('CSV', () => ({ snapshot, options: { asnDb: 'none' } }));

test('a header row, then a row per record with the JSON fields as its columns, each line ended by CRLF', async ({ t }) => {
  for (const q of ['time=99999', 'time=99999&fields=ip,asn,org,hosting,mobile,city,ping&lang=en', 'time=99999&split_ip=1&fields=ip,port,ip_out,telegram,org']) {
    const res = await t.api(`get=csv&${q}`);
    assert.is(res.status, 200);
    assert.is(res.headers.get('content-type'), CSV_TYPE);
    assert.is(res.headers.get('content-disposition'), null);
    const body = await res.text();
    assert.ok(body.endsWith('\r\n') && !/[^\r]\n/.test(body.replace(/"(?:[^"]|"")*"/g, '')), `every line of ?${q} ends with CRLF`);
    const json = (await (await t.api(`get=json&pretty=0&${q}`)).json()) as Array<Record<string, unknown>>;
    const [header, ...rows] = parseCsv(body);
    assert.equal(header, Object.keys(json[0]), `the columns of ?${q} are JSON's keys, in order`);
    // A value as JSON has it: unknown empty, booleans true and false, numbers as JSON writes them.
    const cell = (v: unknown): string => (v === null ? '' : String(v));
    assert.equal(rows, json.map((o) => Object.values(o).map(cell)), `the values of ?${q} are JSON's`);
  }
});

test('quotes a value with a comma, a double quote or a line break, and nothing else', async ({ t }) => {
  const body = await (await t.api('get=csv&time=99999&fields=ip,ping,city,asn,org,hosting,mobile&lang=en')).text();
  assert.is(
    body,
    'ip,ping,city,asn,org,hosting,mobile\r\n' +
      '198.51.100.1:8080,0.12,"Washington, ""D.C.""",64500,"Example\r\nNet, ""Ltd""",true,false\r\n' +
      '198.51.100.2:3128,1.5,Berlin,,,false,\r\n' +
      '[2001:db8::7]:1080,0.08,,,,,\r\n',
  );
  const ru = await (await t.api('get=csv&time=99999&fields=city&ip=198.51.100.1')).text();
  assert.is(ru, 'city\r\n"Вашингтон, округ Колумбия"\r\n');
});

test('the default columns, split_ip, the order and count, and a download', async ({ t }) => {
  const all = parseCsv(await (await t.api('get=csv&time=99999')).text());
  assert.equal(all[0], ['ip', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works', 'smtp', 'telegram', 'avito', 'google', 'the service']);
  assert.equal(all.slice(1).map((r) => r[0]), ['198.51.100.1:8080', '198.51.100.2:3128', '[2001:db8::7]:1080']);
  // An IPv6 entry's own exit, an upper-case country, no city.
  assert.equal([all[3][1], all[3][6], all[3][7]], ['2001:db8::7', 'DE', '']);
  const split = parseCsv(await (await t.api('get=csv&time=99999&split_ip=1&fields=ip,port&sort=ping&count=2')).text());
  assert.equal(split, [['ip', 'port'], ['2001:db8::7', '1080'], ['198.51.100.1', '8080']]);
  const file = await t.api('get=csv.file&time=99999&fields=ip&ip=198.51.100.2');
  assert.is(file.headers.get('content-type'), CSV_TYPE);
  assert.is(file.headers.get('content-disposition'), 'attachment; filename="proxies.csv"');
  assert.is(await file.text(), 'ip\r\n198.51.100.2:3128\r\n');
});

test('no match gives the header row alone; JSON\'s layout parameters are ignored, its fields checked', async ({ t }) => {
  assert.is(await (await t.api('get=csv&country=FR&fields=ip,org')).text(), 'ip,org\r\n');
  const plain = await (await t.api('get=csv&time=99999')).text();
  assert.is(await (await t.api('get=csv&time=99999&format=object&wrap=1&pretty=0&type_prefix=1')).text(), plain);
  assert.is(await (await t.api('get=csv&time=99999&format=table&wrap=2&pretty=x')).text(), plain);
  const bad = await t.api('get=csv&fields=nope');
  assert.is(bad.status, 400);
  assert.match(await bad.text(), /^Error: Invalid fields "nope"; allowed: ip, port, /);
});

test('compressed, and validated by its own ETag: 304, and wait until it changes', async ({ t }) => {
  const q = 'get=csv&time=99999&fields=ip,city,org';
  const plain = await t.api(q);
  const etag = plain.headers.get('etag')!;
  const text = await plain.text();
  assert.is.not(etag, (await t.api('get=json&time=99999&fields=ip,city,org')).headers.get('etag'), 'CSV and JSON bodies are different bodies');
  // Each snapshot a checker writes is of its own second.
  const many = encodeSnapshot(Array.from({ length: 50 }, (_, i) => ({ ...records[1], ip: `198.51.100.${i + 10}` })), TEST_NOW_S + 1);
  const ok = t.server.feed.reloadsOk;
  const held = fetch(`${t.base}/api?key=${TEST_KEY}&${q}&wait=30`, { headers: { 'if-none-match': etag } });
  await new Promise((r) => setTimeout(r, 300));
  assert.is((await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { headers: { 'if-none-match': etag } })).status, 304);
  assert.is(parseCsv(text).length, 4);
  writeFileAtomic(t.snapshot, many);
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, 'the new snapshot');
  const woken = await held;
  assert.is(woken.status, 200, 'the held request is answered once its body changes');
  assert.is.not(woken.headers.get('etag'), etag);
  assert.is(parseCsv(await woken.text()).length, 51);
  const gz = await fetch(`${t.base}/api?key=${TEST_KEY}&${q}`, { headers: { 'accept-encoding': 'gzip' } });
  assert.is(gz.headers.get('content-encoding'), 'gzip');
  assert.is(gz.headers.get('content-type'), CSV_TYPE);
  assert.is(await gz.text(), await (await t.api(q)).text(), 'the decoded body is the plain one');
  writeFileAtomic(t.snapshot, encodeSnapshot(records, TEST_NOW_S + 2));
  await eventually(() => t.server.feed.reloadsOk === ok + 2, 10_000, 'the first snapshot again');
});

test('a change set: op and key columns, upserts then removes, the cursor in List-Cursor', async ({ t }) => {
  const q = 'get=csv&time=99999&fields=ip,works,hosting';
  const whole = await t.api(q);
  const cursor = whole.headers.get('list-cursor')!;
  assert.ok(cursor, 'a whole CSV list carries List-Cursor');
  const nothing = await t.api(`${q}&since=${cursor}`);
  assert.is(await nothing.text(), 'op,key,ip,works,hosting\r\n', 'no change: the header row alone');
  assert.ok(nothing.headers.get('list-cursor'));
  t.clock.advance(1000);
  const ok = t.server.feed.reloadsOk;
  const next = [{ ...records[0], works: 50 }, records[2], { ...base, ip: '198.51.100.3', port: 80, ping_ms: 10 }];
  writeFileAtomic(t.snapshot, encodeSnapshot(next, TEST_NOW_S + 3));
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, 'the next snapshot');
  const changes = await t.api(`${q}&since=${cursor}`);
  assert.is(changes.headers.get('content-type'), CSV_TYPE);
  assert.is(changes.headers.get('list-reset'), null);
  assert.is(
    await changes.text(),
    'op,key,ip,works,hosting\r\n' +
      'upsert,http://198.51.100.3:80,198.51.100.3:80,90,\r\n' +
      'upsert,http://198.51.100.1:8080,198.51.100.1:8080,50,true\r\n' +
      'remove,socks5://198.51.100.2:3128,,,\r\n',
  );
});

test.run();
