import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readQuery } from '../../src/query/query-string.js';
import { parsePlan } from '../../src/query/parse.js';
import { planKey } from '../../src/query/plan.js';
import { DEFAULT_SERVICES } from '../../src/core/vocabulary.js';

const values = (q: string | undefined) => Object.fromEntries(readQuery(q).values);
const plan = (q: string) => {
  const r = parsePlan(readQuery(q), DEFAULT_SERVICES);
  if (!r.ok) throw new Error(r.message);
  return r.plan;
};

const test = suite('query string and plan');

test('form decoding: + is a space, escapes decode, names decode too', () => {
  assert.equal(values('city=New+York&service=the%20service&%6Bey=k'), { city: ['New York'], service: ['the service'], key: ['k'] });
  assert.equal(values('a=%2B1'), { a: ['+1'] });
});

test('no query, empty pieces, names without values, and empty values', () => {
  assert.equal(values(undefined), {});
  assert.equal(values(''), {});
  assert.equal(values('k&key=x'), { key: ['x'] });
  assert.equal(values('&&key=x&&=y&country='), { key: ['x'], '': ['y'] });
  assert.equal(values('a=1=2'), { a: ['1=2'] });
});

test('malformed escapes and invalid UTF-8 are reported by parameter', () => {
  assert.is(readQuery('key=x&city=%E2%82').malformed, 'city');
  assert.is(readQuery('ci%ZZty=x').malformed, 'ci%ZZty');
  assert.is(readQuery('a=%C0%80').malformed, 'a'); // overlong encoding
  assert.is(readQuery('a=%ED%A0%80').malformed, 'a'); // a surrogate
  // Raw bytes that are not UTF-8 reach the reader as U+FFFD.
  assert.is(readQuery('key=x&city=a\uFFFDb').malformed, 'city');
  assert.is(readQuery('\uFFFD=1').malformed, '\uFFFD');
});

test('lists merge across repeats, trim, drop empties and duplicates, keep first-given order', () => {
  const p = plan('type=SOCKS5, http,,&type=http&type=socks4&country=us,DE,us&city=%20Moscow%20,Москва');
  assert.equal(p.types, [3, 0, 2]);
  assert.equal(p.countries, ['US', 'DE']);
  assert.equal(p.cities, ['Moscow', 'Москва']);
});

test('cm and country_mode: either form, equal when both', () => {
  assert.is(plan('country=us&country_mode=EXCEPT').countryMode, 'except');
  assert.is(plan('country=us&cm=except&country_mode=except').countryMode, 'except');
  assert.is(plan('country=us').countryMode, 'include');
});

test('integers allow leading zeros and nothing else', () => {
  assert.is(plan('count=007').count, 7);
  assert.is(plan('ping=1').ping, 1);
  assert.is(plan('').time, 600);
});

test('fields come out in canonical order whatever order they are listed in', () => {
  assert.equal(plan('get=json&fields=the service,IP,ping,port').fields, ['ip', 'port', 'ping', 'the service']);
});

test('the cache key ignores what the body does not depend on', () => {
  assert.is(planKey(plan('type=http&pretty=0&_=1')), planKey(plan('type=HTTP&fields=ip&_=2')));
  assert.is.not(planKey(plan('type=http')), planKey(plan('type=https')));
  assert.is.not(planKey(plan('get=json&pretty=0')), planKey(plan('get=json')));
  assert.is.not(planKey(plan('type_prefix=1')), planKey(plan('')));
});

test.run();
