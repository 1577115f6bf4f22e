import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SERVICES } from '../../src/core/vocabulary.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { PLAN_PARAMETERS, parsePlan } from '../../src/query/parse.js';
import { splitQuery } from '../../src/query/query-split.js';
import { readQuery, type RawParams } from '../../src/query/query-string.js';
import { randomQueries, seeded } from '../helpers/random-queries.js';

/**
 * Who asks, split from what is asked (docs/design.md, Who asks is not what
 * is asked): what the split keeps reads as the whole query does, but for
 * `key`; what it drops no plan reads.
 */
const test = suite('query split');

/** The decoded parameters a plan reads, and the first malformed one: all a plan depends on. */
const asked = (raw: RawParams): string => JSON.stringify([[...raw.values].filter(([name]) => PLAN_PARAMETERS.has(name)), raw.malformed]);

const records = generateRecords({ records: 300, seed: 7, now: 1_800_000_000 });
const rand = seeded(11);
const extras = ['_=1700000000', '_=', 'nocache=' + 'x'.repeat(40), 'utm_source=a+b', 'bad=%ZZ', 'x=%E2%82%AC', '=v', 'flag', '%5F=1', 'ty%70e=http', 'key', 'key='];

test('the split reads as the whole query, for the plan and for the key, on generated queries with keys and ignored parameters', () => {
  let split = 0;
  for (const base of randomQueries(records, 3000, 5)) {
    const parts = base === '' ? [] : base.split('&');
    const keyCount = Math.floor(rand() * 3);
    for (let k = 0; k < keyCount; k++) parts.splice(Math.floor(rand() * (parts.length + 1)), 0, `key=${rand() < 0.2 ? 'k%41' : 'k' + k}`);
    for (let e = Math.floor(rand() * 3); e > 0; e--) parts.splice(Math.floor(rand() * (parts.length + 1)), 0, extras[Math.floor(rand() * extras.length)]);
    const query = parts.join('&');
    const whole = readQuery(query);
    const s = splitQuery(query);
    if (s === null) {
      // Only a name or a key that must be decoded is not split.
      assert.ok(/(^|&)[^=&]*[%+]/.test(query) || /(^|&)key=[^&]*[%+]/.test(query), query);
      continue;
    }
    split++;
    assert.is(asked(readQuery(s.what)), asked(whole), query);
    const keys = whole.values.get('key') ?? [];
    assert.is(s.keys, keys.length, query);
    assert.is(s.key, keys.length === 1 ? keys[0] : null, query);
    assert.not.ok(readQuery(s.what).values.has('key'), query);
  }
  assert.ok(split > 2000, `most queries split (${split})`);
});

test('requests that differ in the key and in ignored parameters ask the same', () => {
  const a = splitQuery('key=alice&type=http&_=1700000000&count=5')!;
  const b = splitQuery('_=1700000001&type=http&key=bob&count=5&utm=x')!;
  assert.is(a.what, 'type=http&count=5');
  assert.is(b.what, a.what);
  assert.is(a.key, 'alice');
  assert.is(b.key, 'bob');
  assert.equal(splitQuery('key=a&key=b'), { what: '', key: null, keys: 2 });
  assert.equal(splitQuery('key=&type=http'), { what: 'type=http', key: null, keys: 0 });
  // An ignored parameter that does not decode stays: it is the malformed one an error names.
  assert.is(splitQuery('key=a&x=%ZZ&type=http')!.what, 'x=%ZZ&type=http');
  assert.is(splitQuery('k%65y=a'), null);
  assert.is(splitQuery('key=a%20b'), null);
});

test('every parameter a plan reads is one the split keeps', () => {
  const read = new Set<string>();
  class Recording extends Map<string, string[]> {
    override get(name: string) {
      read.add(name);
      return super.get(name);
    }
    override has(name: string) {
      read.add(name);
      return super.has(name);
    }
  }
  for (const query of [...randomQueries(records, 500, 9), 'get=json&since=x', 'get=stats&since=x', 'get=txt&since=x', 'timecheck=1', 'ip_out=1']) {
    const raw = readQuery(query);
    parsePlan({ values: new Recording(raw.values), malformed: raw.malformed }, DEFAULT_SERVICES);
  }
  for (const name of read) assert.ok(PLAN_PARAMETERS.has(name), `${name} is read by the plan`);
  assert.ok(read.size >= PLAN_PARAMETERS.size - 1, `the plan reads ${[...read].join(' ')}`);
});

test.run();
