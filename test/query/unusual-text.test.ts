import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { TEST_NOW_S, serverSuite } from '../helpers/server.js';

/**
 * Rows are copied in 8-byte words moved as doubles, which is exact for UTF-8
 * text only, and values are copied a fixed number of words past their end.
 * Cities and service names of every UTF-8 length, control and DEL characters,
 * escapes and lone surrogates, at every offset, and pings of every length,
 * must come out as the reference writes them. Twice: with cities short enough
 * to be copied in a fixed number of words, and with one too long for that.
 */
const NAMES = [
  '', 'a', 'ab', 'abc', 'Ö', 'ÖÖÖ', '東京', '😀', '😀😀😀', 'x😀', 'xx😀', 'xxx😀', '\u007f', '\u007f\u007f\u007f\u007f\u007f\u007f\u007f\u007f',
  '😀\u007f', 'ÿ\u007f', '\u{10FFFF}\u007f', 'tab\there', 'quote"back\\slash', 'new\nline', '\u0000\u0001\u001f', '\ud800', 'a\udfffb',
  'Санкт-Петербург', 'ab\u2028cd', 'a'.repeat(9), '😀'.repeat(9),
];
// The long name is past what one table of service combinations takes.
const SERVICES = ['telegram', 'Öffi', '東京😀', 'x\u007f', 'google', 'a"b', 'seven77', 'eight888', 'long'.repeat(80)];
const LONG_CITY = '東京'.repeat(12) + '😀x';
const PINGS = [0, 1, 7, 10, 999, 1000, 1001, 12_345, 123_456_789, 1e21];

function suiteFor(names: readonly string[]): void {
  const base = generateRecords({ records: 400, seed: 5, now: TEST_NOW_S });
  const records = base.map((r, i) => ({
    ...r,
    ping_ms: i % 3 === 0 ? PINGS[i % PINGS.length] : r.ping_ms,
    city: { ru: names[i % names.length], en: names[(i * 7 + 3) % names.length] },
    services: SERVICES.filter((_, k) => ((i >> k) & 1) === 1),
  }));
  const snapshot = encodeSnapshot(records, TEST_NOW_S, SERVICES);
  const reference = NaiveEngine.fromFile(snapshot);

  const test = serverSuite(`unusual text in rows (longest city ${Math.max(...names.map((n) => Buffer.byteLength(n)))} bytes)`, () => ({ snapshot, options: { cacheBytes: 0 } }));

  test('every shape of JSON row, with both languages, equals the reference byte for byte', async ({ t }) => {
    const all = await (await t.api('get=json&time=99999&pretty=0')).text();
    assert.is(JSON.parse(all).length, new Set(records.map((r) => `${r.ip}:${r.port}:${r.type}`)).size, 'every record was loaded');
    const pieces = [
      `${JSON.stringify('東京😀')}:true`, `${JSON.stringify('x\u007f')}:false`, '"ping":1000000000000000000,', '"ping":0.001,',
      ...['😀😀😀', '\u0000\u0001\u001f', '\u007f'].map((c) => `"city":${JSON.stringify(c)}`),
    ];
    for (const piece of pieces) assert.ok(all.includes(piece), `the body has ${piece}`);
    const queries = [
      'get=json&time=99999', 'get=json&time=99999&lang=en', 'get=json&time=99999&pretty=0', 'get=json&time=99999&format=object&lang=en',
      'get=json&time=99999&fields=city&pretty=0', 'get=json&time=99999&fields=city,works,Öffi&split_ip=1', 'get=json&time=99999&wrap=1&pretty=0&lang=en',
      `get=json&time=99999&fields=${encodeURIComponent(SERVICES.join(','))}`, 'time=99999', 'time=99999&type_prefix=1',
    ];
    for (const q of queries) {
      const body = await (await t.api(q)).text();
      const want = reference.answer(`key=x&${q}`, t.clock.nowMs());
      assert.is(want.status, 200, q);
      if (body !== want.body) assert.fixture(body, want.body, `?${q}`);
    }
  });

  test.run();
}

suiteFor(NAMES);
suiteFor([...NAMES, LONG_CITY]);
