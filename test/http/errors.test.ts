import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { RawConnection } from '../helpers/raw-http.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, serverSuite, testEngine } from '../helpers/server.js';

const snapshot = encodeSnapshot(generateRecords({ records: 500, seed: 3, now: TEST_NOW_S }), TEST_NOW_S);
const keys = {
  keys: [
    { key: TEST_KEY, limits: UNLIMITED },
    { key: 'off', disabled: true },
    { key: 'old', expires_at: '2026-11-01T00:00:00+02:00' },
    { key: 'later', expires_at: '2027-01-01T00:00:00+02:00', limits: UNLIMITED },
  ],
};

async function expectError(res: Response, status: number, body: string, headers: Record<string, string> = {}): Promise<void> {
  const text = await res.text();
  assert.is(res.status, status, `status for ${res.url}: ${text}`);
  assert.is(text, body);
  assert.is(res.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.is(res.headers.get('cache-control'), 'no-store');
  for (const [name, value] of Object.entries(headers)) assert.is(res.headers.get(name), value, name);
}

const test = serverSuite('errors (docs/api.md, Errors)', () => ({ snapshot, keys }));

test('unknown paths get 404', async ({ t }) => {
  await expectError(await t.get('/index.html'), 404, 'Error: Not found');
  await expectError(await t.get('/api/'), 404, 'Error: Not found');
  await expectError(await t.get('/apis?key=x'), 404, 'Error: Not found');
});

test('methods other than GET and HEAD get 405 with Allow', async ({ t }) => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    await expectError(await t.get(`/api?key=${TEST_KEY}`, { method }), 405, 'Error: Method not allowed', { allow: 'GET, HEAD' });
  }
});

test('a request target over 8192 bytes gets 414; 8192 exactly does not', async ({ t }) => {
  const prefix = `/api?key=${TEST_KEY}&count=1&_=`;
  await expectError(await t.get(prefix + 'a'.repeat(8193 - prefix.length)), 414, 'Error: Request URI too long');
  const ok = await t.get(prefix + 'a'.repeat(8192 - prefix.length));
  assert.is(ok.status, 200);
  // Multi-byte characters count as their UTF-8 bytes.
  await expectError(await t.get(prefix + '%D0%96'.repeat(1400)), 414, 'Error: Request URI too long');
});

test('a missing or empty key gets 401 "not provided"', async ({ t }) => {
  for (const path of ['/api', '/api?', '/api?key=', '/api?type=http', '/api?key&type=http', '/api?KEY=abc']) {
    await expectError(await t.get(path), 401, 'Error: Access key not provided');
  }
});

test('an unknown, disabled or expired key gets 401 "invalid"', async ({ t }) => {
  for (const key of ['nope', 'off', 'old', TEST_KEY + ' ', TEST_KEY.toUpperCase()]) {
    await expectError(await t.get(`/api?key=${encodeURIComponent(key)}`), 401, 'Error: Invalid access key');
  }
  assert.is((await t.get('/api?key=later&count=1')).status, 200);
});

test('key problems come before parameter problems', async ({ t }) => {
  await expectError(await t.get('/api?key=nope&type=bogus'), 401, 'Error: Invalid access key');
  await expectError(await t.get('/api?type=bogus'), 401, 'Error: Access key not provided');
});

const BAD: Array<[string, string]> = [
  ['type=htp', 'Error: Invalid type "htp"; allowed: http, https, socks4, socks5'],
  ['type=http,bogus', 'Error: Invalid type "bogus"; allowed: http, https, socks4, socks5'],
  ['anon=high', 'Error: Invalid anon "high"; allowed: transparent, anonymous, elite'],
  ['port=0', 'Error: Invalid port "0"; allowed: integers from 1 to 65535'],
  ['port=65536', 'Error: Invalid port "65536"; allowed: integers from 1 to 65535'],
  ['port=80,http', 'Error: Invalid port "http"; allowed: integers from 1 to 65535'],
  ['port=-1', 'Error: Invalid port "-1"; allowed: integers from 1 to 65535'],
  ['sort=fast', 'Error: Invalid sort "fast"; allowed: time, ping, works, random'],
  ['sort=ping&sort=works', 'Error: Parameter sort is given more than once'],
  ['offset=-1', 'Error: Invalid offset "-1"; allowed: an integer >= 0'],
  ['ping=0', 'Error: Invalid ping "0"; allowed: an integer >= 1 (milliseconds)'],
  ['ping=-5', 'Error: Invalid ping "-5"; allowed: an integer >= 1 (milliseconds)'],
  ['ping=1.5', 'Error: Invalid ping "1.5"; allowed: an integer >= 1 (milliseconds)'],
  ['ping=1e3', 'Error: Invalid ping "1e3"; allowed: an integer >= 1 (milliseconds)'],
  ['ping=0x10', 'Error: Invalid ping "0x10"; allowed: an integer >= 1 (milliseconds)'],
  ['time=0', 'Error: Invalid time "0"; allowed: an integer >= 1 (seconds)'],
  ['time=%2B5', 'Error: Invalid time "+5"; allowed: an integer >= 1 (seconds)'],
  ['works=101', 'Error: Invalid works "101"; allowed: an integer from 0 to 100'],
  ['country=usa', 'Error: Invalid country "usa"; allowed: two-letter country codes'],
  ['country=u1', 'Error: Invalid country "u1"; allowed: two-letter country codes'],
  ['cm=exclude', 'Error: Invalid cm "exclude"; allowed: include, except'],
  ['country_mode=all', 'Error: Invalid country_mode "all"; allowed: include, except'],
  ['cm=include&country_mode=except', 'Error: Parameters cm and country_mode disagree; allowed: include or except, the same in both'],
  ['service=youtube', 'Error: Invalid service "youtube"; allowed: smtp, telegram, avito, google, the service'],
  ['count=0', 'Error: Invalid count "0"; allowed: an integer >= 1'],
  ['count=99999999999999999999', 'Error: Invalid count "99999999999999999999"; allowed: an integer >= 1'],
  ['lang=de', 'Error: Invalid lang "de"; allowed: ru, en'],
  ['get=xml', 'Error: Invalid get "xml"; allowed: txt, json, csv, txt.file, json.file, csv.file, stats'],
  ['get=stat', 'Error: Invalid get "stat"; allowed: txt, json, csv, txt.file, json.file, csv.file, stats'],
  ['wait=0', 'Error: Invalid wait "0"; allowed: an integer from 1 to 60 (seconds)'],
  ['wait=61', 'Error: Invalid wait "61"; allowed: an integer from 1 to 60 (seconds)'],
  ['wait=5&wait=5', 'Error: Parameter wait is given more than once'],
  ['get=stats&wait=61', 'Error: Invalid wait "61"; allowed: an integer from 1 to 60 (seconds)'],
  ['get=stats&pretty=2', 'Error: Invalid pretty "2"; allowed: 0, 1'],
  ['get=stats&ip=1.2.3', 'Error: Invalid ip "1.2.3"; allowed: a.b.c.d, a.b.c.d:port, an IPv6 address or [IPv6]:port'],
  ['type_prefix=2', 'Error: Invalid type_prefix "2"; allowed: 0, 1'],
  ['get=json&pretty=2', 'Error: Invalid pretty "2"; allowed: 0, 1'],
  ['get=json&split_ip=yes', 'Error: Invalid split_ip "yes"; allowed: 0, 1'],
  ['get=json&wrap=true', 'Error: Invalid wrap "true"; allowed: 0, 1'],
  ['get=json&format=list', 'Error: Invalid format "list"; allowed: array, object'],
  ['get=json.file&fields=ip,host', 'Error: Invalid fields "host"; allowed: ip, port, ip_out, type, anon, ping, timecheck, country, city, works, asn, org, hosting, mobile, smtp, telegram, avito, google, the service'],
  ['get=json&ip=1.2.3', 'Error: Invalid ip "1.2.3"; allowed: a.b.c.d, a.b.c.d:port, an IPv6 address or [IPv6]:port'],
  ['get=json&ip=1.2.3.4:0', 'Error: Invalid ip "1.2.3.4:0"; allowed: a.b.c.d, a.b.c.d:port, an IPv6 address or [IPv6]:port'],
  ['get=json&ip=1.2.3.4:70000', 'Error: Invalid ip "1.2.3.4:70000"; allowed: a.b.c.d, a.b.c.d:port, an IPv6 address or [IPv6]:port'],
  ['timecheck=2026-01-01', 'Error: Parameter timecheck is output-only and cannot be used as a filter'],
  ['ip_out=1.2.3.4', 'Error: Parameter ip_out is output-only and cannot be used as a filter'],
  ['time=60&time=120', 'Error: Parameter time is given more than once'],
  ['get=json&get=txt', 'Error: Parameter get is given more than once'],
  ['city=%ZZ', 'Error: Malformed percent-encoding or UTF-8 in parameter city'],
  ['city=%C3%28', 'Error: Malformed percent-encoding or UTF-8 in parameter city'],
  ['city=%E0%80%AF', 'Error: Malformed percent-encoding or UTF-8 in parameter city'],
  [`type=${'x'.repeat(100)}`, `Error: Invalid type "${'x'.repeat(64)}"; allowed: http, https, socks4, socks5`],
  ['type=a%0Ab%09c%1Bd', 'Error: Invalid type "abcd"; allowed: http, https, socks4, socks5'],
  ...['cloudflare', '0', 'AS', 'AS-1', '4294967296', '13335.0', 'ASN13335', '12345678901'].map((item): [string, string] =>
    [`asn=13335,${encodeURIComponent(item)}`, `Error: Invalid asn "${item}"; allowed: AS numbers from 1 to 4294967295, as 13335 or AS13335`]),
  ['hosting=2', 'Error: Invalid hosting "2"; allowed: 0, 1'],
  ['mobile=yes', 'Error: Invalid mobile "yes"; allowed: 0, 1'],
  ['hosting=1&hosting=0', 'Error: Parameter hosting is given more than once'],
  // In reading order: the entry's family, then the exit's network, then wait.
  ['ipv=5&asn=x', 'Error: Invalid ipv "5"; allowed: 4, 6'],
  ['asn=x&hosting=2&wait=0', 'Error: Invalid asn "x"; allowed: AS numbers from 1 to 4294967295, as 13335 or AS13335'],
  ['hosting=2&mobile=2', 'Error: Invalid hosting "2"; allowed: 0, 1'],
  ['mobile=2&wait=0', 'Error: Invalid mobile "2"; allowed: 0, 1'],
  ['get=stats&asn=x', 'Error: Invalid asn "x"; allowed: AS numbers from 1 to 4294967295, as 13335 or AS13335'],
];

test('invalid parameters get 400 naming the parameter and the allowed values', async ({ t }) => {
  for (const [query, body] of BAD) await expectError(await t.api(query), 400, body);
});

test('a malformed or repeated key gets 400 before anything else', async ({ t }) => {
  await expectError(await t.get('/api?key=%ZZ'), 400, 'Error: Malformed percent-encoding or UTF-8 in parameter key');
  await expectError(await t.get(`/api?key=${TEST_KEY}&key=${TEST_KEY}`), 400, 'Error: Parameter key is given more than once');
});

test('raw bytes outside ASCII: uws reads UTF-8 and refuses the rest with 400; the node engine refuses them all with 400 and closes', async ({ t }) => {
  const raw = async (target: string, encoding: BufferEncoding) => {
    const connection = await RawConnection.open(t.server.port);
    try {
      return await connection.request(Buffer.from(target, encoding));
    } finally {
      connection.close();
    }
  };
  const bad = await raw(`/api?key=${TEST_KEY}&city=Mos\xffcow`, 'latin1');
  const good = await raw(`/api?key=${TEST_KEY}&get=json&pretty=0&fields=city&count=1&city=Москва`, 'utf8');
  assert.is(bad.status, 400);
  if (testEngine().name === 'uws') {
    assert.is(bad.body.toString(), 'Error: Malformed percent-encoding or UTF-8 in parameter city');
    assert.is(good.body.toString(), '[{"city":"Москва"}]');
  } else {
    // Node's parser refuses such a target (RFC 9112 3.2), before the service reads it: percent-encoded, the same query is served.
    for (const r of [bad, good]) {
      assert.is(r.status, 400);
      assert.is(r.body.toString(), 'Error: Invalid request target: percent-encode bytes outside ASCII (RFC 3986)');
      assert.is(r.headers.get('connection'), 'close');
    }
    assert.is(await (await t.api(`get=json&pretty=0&fields=city&count=1&city=${encodeURIComponent('Москва')}`)).text(), '[{"city":"Москва"}]');
  }
});

test("the other output's parameters are ignored, not validated", async ({ t }) => {
  assert.is((await t.api('pretty=banana&fields=nope&ip=x&format=z&count=1')).status, 200);
  assert.is((await t.api('get=json&type_prefix=banana&count=1')).status, 200);
  // Empty values count as not given.
  assert.is((await t.api('type=&ping=&count=1&timecheck=')).status, 200);
});

test.run();

const loading = serverSuite('before the first snapshot', () => ({ snapshot: null, keys }));

loading('/api answers 503 with Retry-After, after the key and parameter checks', async ({ t }) => {
  await expectError(await t.api('count=1'), 503, 'Error: Proxy list is not loaded yet', { 'retry-after': '5' });
  await expectError(await t.api('type=bogus'), 400, 'Error: Invalid type "bogus"; allowed: http, https, socks4, socks5');
  await expectError(await t.get('/api?key=nope'), 401, 'Error: Invalid access key');
});

loading('/health answers 503 loading', async ({ t }) => {
  const res = await t.get('/health');
  assert.is(res.status, 503);
  const doc = (await res.json()) as { status: string };
  assert.is(doc.status, 'loading');
});

loading.run();
