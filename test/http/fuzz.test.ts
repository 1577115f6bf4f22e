import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { RawConnection, type RawResponse } from '../helpers/raw-http.js';
import { TEST_KEY, TEST_NOW_S, serverSuite, testEngine } from '../helpers/server.js';

/**
 * Random and adversarial query strings, sent as raw bytes. Every answer must
 * be 414 for a target over 8 KiB, a 400 with a one-line `Error: ` body, or a
 * 200 whose bytes are the reference's; the server must keep answering.
 */
const RUNS = 20_000;
const records = generateRecords({ records: 2_000, seed: 17, now: TEST_NOW_S });
const snapshot = encodeSnapshot(records, TEST_NOW_S);
const reference = NaiveEngine.fromFile(snapshot);

// Wire text: one character per byte (latin1), so raw non-UTF-8 bytes can be
// written. Raw UTF-8, except what cannot stand in a request line: space and controls.
// eslint-disable-next-line no-control-regex
const utf8Wire = (s: string): string => Buffer.from(s.replace(/[\u0000-\u0020\u007f]/g, encodeURIComponent)).toString('latin1');

const NAMES = ['type', 'anon', 'ping', 'time', 'works', 'country', 'cm', 'country_mode', 'city', 'service', 'count', 'lang',
  'get', 'type_prefix', 'fields', 'split_ip', 'format', 'wrap', 'pretty', 'ip', 'ipv', 'key', 'timecheck', 'ip_out', '_'];
const WORDS = ['http', 'https', 'socks4', 'socks5', 'transparent', 'anonymous', 'elite', 'include', 'except', 'ru', 'en',
  'txt', 'json', 'csv', 'txt.file', 'json.file', 'csv.file', 'array', 'object', 'smtp', 'telegram', 'avito', 'google', 'the service', 'ip',
  'port', 'ip_out', 'ping', 'timecheck', 'country', 'city', 'works', 'us', 'de', 'RU', 'zz', '0', '1', 'Москва', 'Moscow',
  'санкт-петербург', '4', '6', '2001:db8::1', '[2001:db8::1]:80', records[0].ip, `${records[1].ip}:${records[1].port}`];
const BAD_ESCAPES = ['%', '%%', '%G1', '%1', '%C3%28', '%FF', '%E2%82', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', '%00', '%0A',
  '%0D%0A', '%7F', '%E2%80%AE', '%EF%BF%BD', '%2C', '%26', '%3D'];

const oddCase = (s: string) =>
  fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length })
    .map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
const escaped = (s: string) => fc.constantFrom(
  utf8Wire(s),
  encodeURIComponent(s),
  encodeURIComponent(s).replace(/%20/g, '+'),
);
const word = fc.constantFrom(...WORDS).chain(oddCase).chain(escaped);
// Bytes a request target may carry: visible ASCII and raw bytes over 0x7F.
const rawByte = fc.oneof(fc.integer({ min: 0x21, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff })).map((b) => String.fromCharCode(b));

const value = fc.oneof(
  { weight: 6, arbitrary: word },
  { weight: 4, arbitrary: fc.array(fc.tuple(word, fc.constantFrom('', '+', '%20')), { minLength: 1, maxLength: 6 })
    .map((items) => items.map(([w, pad]) => pad + w + pad).join(',')) },
  { weight: 4, arbitrary: fc.oneof(fc.nat({ max: 200_000 }).map(String), fc.bigInt({ min: 0n, max: 10n ** 40n }).map(String)) },
  { weight: 2, arbitrary: fc.constantFrom('-1', '+5', '1e3', '0x1F', '1.5', '00000', '0', '%20%35', '٣', '１', 'NaN', 'Infinity').map(utf8Wire) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('9', 'a', '%41', 'é', ',', '%', '%D0%96'), fc.integer({ min: 100, max: 9000 }))
    .map(([s, n]) => (s === 'é' ? utf8Wire(s) : s).repeat(n)) },
  { weight: 3, arbitrary: fc.array(fc.oneof(word, fc.constantFrom(...BAD_ESCAPES)), { minLength: 1, maxLength: 4 }).map((a) => a.join('')) },
  { weight: 2, arbitrary: fc.string({ unit: rawByte, maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).chain(escaped) },
  { weight: 1, arbitrary: fc.constant('') },
);
const name = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 1, arbitrary: fc.constantFrom(...NAMES).chain(oddCase) },
  { weight: 1, arbitrary: fc.constantFrom(...NAMES).map((n) => encodeURIComponent(n).replace(/^./, (c) => '%' + c.charCodeAt(0).toString(16))) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ unit: rawByte, maxLength: 8 }), fc.constantFrom(...BAD_ESCAPES)) },
);
const param = fc.oneof(
  { weight: 9, arbitrary: fc.tuple(name, value).map(([n, v]) => `${n}=${v}`) },
  { weight: 1, arbitrary: name },
);
const query = fc.oneof(
  { weight: 12, arbitrary: fc.array(param, { maxLength: 12 }).map((ps) => ps.join('&')) },
  // Thousands of parameters: one repeated, or all different. At most 32 KiB:
  // uWebSockets.js drops heads it cannot read at once (see the pitfalls test).
  { weight: 1, arbitrary: fc.tuple(param, fc.integer({ min: 300, max: 5000 }))
    .map(([p, n]) => Array(Math.min(n, Math.floor(32_000 / (p.length + 1)))).fill(p).join('&')) },
  { weight: 1, arbitrary: fc.integer({ min: 300, max: 3000 }).map((n) => Array.from({ length: n }, (_, i) => `_${i}=${i}`).join('&')) },
);
const target = fc.tuple(query, fc.boolean()).map(([q, keyLast]) => {
  const wire = keyLast ? `/api?${q}&key=${TEST_KEY}` : `/api?key=${TEST_KEY}&${q}`;
  return Buffer.from(wire, 'latin1');
  // Request heads stay within the 64 KiB the service takes; past it uWebSockets.js v20.57 answers 431 itself (docs/operations.md, Where it runs).
}).filter((wire) => wire.length <= 60_000);

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Node's parser refuses raw bytes outside ASCII in a target, before the service reads it (docs/operations.md, What each build answers). */
const refusesRawBytes = testEngine().name === 'node';

function checkAnswer(wire: Buffer, res: RawResponse): void {
  const shown = wire.toString('latin1').slice(0, 300);
  if (refusesRawBytes && wire.some((b) => b >= 0x80)) {
    assert.is(res.status, 400, `status of ${shown}`);
    assert.is(res.body.toString(), 'Error: Invalid request target: percent-encode bytes outside ASCII (RFC 3986)');
    return;
  }
  // A raw byte that is not UTF-8 reaches the server as one U+FFFD, and a run of
  // them may become fewer, so near the limit such a target may be measured short.
  if (wire.length > 8192 && !(res.status === 400 && !isUtf8(wire))) {
    assert.is(res.status, 414, `status of ${shown}`);
    assert.is(res.body.toString(), 'Error: Request URI too long');
    return;
  }
  if (res.status !== 200) {
    assert.is(res.status, 400, `status of ${shown}: ${res.body.toString()}`);
    assert.is(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    const text = strictUtf8.decode(res.body);
    assert.ok(text.startsWith('Error: '), `body of ${shown}: ${text}`);
    // eslint-disable-next-line no-control-regex
    assert.not.match(text, /[\u0000-\u001f\u007f]/, `a one-line body without control characters: ${JSON.stringify(text)}`);
    assert.ok(text.length < 400, `a short body: ${text.length} characters`);
    return;
  }
  const queryText = wire.subarray(wire.indexOf('?') + 1).toString('utf8');
  const want = reference.answer(queryText, TEST_NOW_S * 1000);
  assert.is(res.headers.get('content-type'), want.contentType, `content-type of ${shown}`);
  assert.is(res.headers.get('content-disposition'), want.disposition ?? undefined, `content-disposition of ${shown}`);
  if (res.body.toString() !== want.body) assert.fixture(res.body.toString(), want.body, `body of ${shown}`);
}

const test = serverSuite('query fuzz', () => ({ snapshot }));

test(`${RUNS} random and adversarial query strings: 200 with the reference's bytes, or a one-line 4xx`, async ({ t }) => {
  const normal = `/api?key=${TEST_KEY}&get=json&type=http&count=20&pretty=0`;
  const normalBody = reference.answer(normal.slice(5), TEST_NOW_S * 1000).body;
  let connection = await RawConnection.open(t.server.port);
  const statuses = new Map<number, number>();
  let runs = 0;
  const result = await fc.check(
    fc.asyncProperty(target, async (wire) => {
      let res: RawResponse;
      try {
        res = await connection.request(wire);
      } catch (err) {
        connection = await RawConnection.open(t.server.port); // a fresh connection for the next case
        throw err;
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      // A request the engine's parser refused (the node engine: raw bytes outside ASCII) is answered, and the connection closed.
      if (res.headers.get('connection') === 'close') connection = await RawConnection.open(t.server.port);
      checkAnswer(wire, res);
      if (++runs % 1000 === 0) {
        const follow = await connection.request(normal);
        assert.is(follow.body.toString(), normalBody, 'a normal query after the fuzz cases');
      }
    }),
    { numRuns: RUNS },
  );
  if (result.failed) {
    // The counterexample can be kilobytes long: show its start and the failure.
    const wire = result.counterexample![0].toString('latin1');
    const error = result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
    throw new Error(`seed ${result.seed}, path ${result.counterexamplePath}: ${wire.length} bytes ${JSON.stringify(wire.slice(0, 300))}\n${error.slice(0, 2000)}`);
  }
  const follow = await connection.request(normal);
  connection.close();
  assert.is(follow.status, 200);
  assert.is(follow.body.toString(), normalBody);
  // The generator must reach every outcome often, not only errors.
  for (const status of [200, 400, 414]) assert.ok((statuses.get(status) ?? 0) > RUNS / 100, `status ${status}: ${JSON.stringify([...statuses])}`);
});

test.run();
