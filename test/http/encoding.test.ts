import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Codings } from '../../src/http/accept-encoding.js';

const codings = new Codings();
const negotiate = (header: string) => codings.negotiate(header);

const cases: Array<[string, string | null]> = [
  ['', null],
  ['identity', null],
  ['gzip', 'gzip'],
  ['br', 'br'],
  ['gzip, deflate, br', 'br'],
  ['gzip, deflate', 'gzip'],
  ['deflate', null],
  ['GZIP', 'gzip'],
  ['x-gzip', 'gzip'],
  ['br;q=0.5, gzip;q=0.5', 'br'],
  ['br;q=0.4, gzip;q=0.5', 'gzip'],
  ['br;q=0, gzip', 'gzip'],
  ['gzip;q=0, br;q=0', null],
  ['gzip;q=0', null],
  ['*', 'br'],
  ['*;q=0.5, br;q=0.1', 'gzip'],
  ['*;q=0', null],
  ['br;q=0, *', 'gzip'],
  ['gzip ; q=0.8 , br ; q=0.9', 'br'],
  ['br;q=1.5', null],
  ['br;q=abc, gzip', 'gzip'],
];

for (const [header, chosen] of cases) {
  test(`Accept-Encoding: ${JSON.stringify(header)} -> ${chosen ?? 'as it is'}`, () => {
    assert.is(negotiate(header), chosen);
    assert.is(negotiate(header), chosen, 'the remembered answer is the same');
  });
}

test.run();
