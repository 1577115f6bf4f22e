import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SERVICES } from '../../src/core/vocabulary.js';
import { RecordDecoder } from '../../src/snapshot/record-decoder.js';
import { recordProblem } from '../reference/naive-validity.js';

/**
 * The byte-level record decoder against the reference's reading of the same
 * record after msgpackr decodes it: the same verdict, and for valid records
 * the same values, over generated records valid and broken in every field and
 * in every MessagePack encoding msgpackr writes (ints of each width, float32
 * and float64, nil, strings of each length class, maps and arrays of each size).
 */
const packr = new Packr({ useRecords: false });
const float32 = new Packr({ useRecords: false, useFloat32: 1 });

const anyValue = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.string(), fc.constant([]), fc.constant({}), fc.uint8Array({ maxLength: 4 }),
);
const octet = fc.nat(255);
const validIp = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'));
const validRecord = fc.record(
  {
    ip: validIp,
    port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constant(8080.0)),
    ip_out: fc.oneof(fc.constant(undefined), fc.constant(null), validIp),
    type: fc.constantFrom('http', 'https', 'socks4', 'socks5'),
    anon: fc.constantFrom('transparent', 'anonymous', 'elite'),
    ping_ms: fc.oneof(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.integer({ min: 0, max: 100000 })),
    checked_at: fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constant(2 ** 31)),
    country: fc.constantFrom('us', 'DE', 'Ru'),
    city: fc.oneof(fc.constant(undefined), fc.constant(null), fc.record({ ru: fc.oneof(fc.string(), fc.constant(null)), en: fc.string(), extra: fc.string() }, { requiredKeys: [] })),
    works: fc.integer({ min: 0, max: 100 }),
    services: fc.oneof(fc.constant(undefined), fc.constant(null), fc.uniqueArray(fc.constantFrom(...DEFAULT_SERVICES))),
    asn: fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer({ min: 1, max: 4294967295 }), fc.constant(13335.0)),
    org: fc.oneof(fc.constant(undefined), fc.constant(null), fc.string(), fc.constant('Я'.repeat(128))),
    hosting: fc.oneof(fc.constant(undefined), fc.constant(null), fc.boolean()),
    mobile: fc.oneof(fc.constant(undefined), fc.constant(null), fc.boolean()),
    unknown_key: fc.oneof(fc.constant(undefined), anyValue),
  },
  { requiredKeys: ['ip', 'port', 'type', 'anon', 'ping_ms', 'checked_at', 'country', 'works'] },
);
/** Breakages, each of one field: removed, of another type, or out of its range. */
const fields = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping_ms', 'checked_at', 'country', 'city', 'works', 'services', 'asn', 'org', 'hosting', 'mobile'];
const badValues: Record<string, unknown[]> = {
  ip: ['1.2.3', '01.2.3.4', '256.1.1.1', '1.2.3.4.5', ' 1.2.3.4', ''],
  port: [0, 65536, -1, 80.5],
  ip_out: ['1.2.3', 'x'],
  type: ['HTTP', 'ftp'],
  anon: ['high', 'Elite'],
  ping_ms: [-1, Infinity, NaN, -0.5],
  checked_at: [-1, 2 ** 32, 1.5],
  country: ['usa', 'u1', '', 'ß'],
  city: ['Moscow', [], { ru: 5 }, { en: true }, { ru: 'Я'.repeat(129) }, { en: 'x'.repeat(257) }],
  works: [-1, 101, 50.5],
  services: ['telegram', ['youtube'], ['SMTP'], [1]],
  asn: [0, -1, 2 ** 32, 1.5, 'AS13335', '13335', true],
  org: [5, true, ['x'], { ru: 'x' }, 'Я'.repeat(129), 'x'.repeat(257)],
  hosting: [0, 1, 'true', 'false', []],
  mobile: [0, 1, 'true', 'false', {}],
};
const breakage = fc.tuple(fc.constantFrom(...fields), fc.oneof(fc.constant('remove'), anyValue, fc.nat(10)));
const record = fc.tuple(validRecord, fc.array(breakage, { maxLength: 2 })).map(([r, breaks]) => {
  const copy: Record<string, unknown> = { ...r };
  for (const [field, how] of breaks) {
    if (how === 'remove') delete copy[field];
    else if (typeof how === 'number') copy[field] = badValues[field][how % badValues[field].length];
    else copy[field] = how;
  }
  return copy;
});

const test = suite('record decoder');

test('agrees with the reference on 5,000 generated records, valid and broken', () => {
  const decoder = new RecordDecoder(DEFAULT_SERVICES);
  let valid = 0;
  fc.assert(
    fc.property(record, fc.boolean(), (r, useFloat32) => {
      const bytes = (useFloat32 ? float32 : packr).pack(r);
      const roundTrip = packr.unpack(bytes) as Record<string, unknown>;
      const end = decoder.read(bytes, 0);
      assert.is(end, bytes.length, 'reads the whole record');
      const expected = recordProblem(roundTrip, DEFAULT_SERVICES);
      assert.is(decoder.problem === null, expected === null, `verdict for ${JSON.stringify(roundTrip)}: ${decoder.problem} vs ${expected}`);
      if (expected !== null) return;
      valid++;
      assert.is(decoder.port, roundTrip.port);
      assert.is(decoder.ping, Math.round(roundTrip.ping_ms as number));
      assert.is(decoder.checkedAt, roundTrip.checked_at);
      assert.is(decoder.works, roundTrip.works);
      assert.is(decoder.type, ['http', 'https', 'socks4', 'socks5'].indexOf(roundTrip.type as string));
      const services = (roundTrip.services as string[] | null) ?? [];
      assert.is(decoder.services, DEFAULT_SERVICES.reduce((m, s, i) => (services.includes(s) ? m | (1 << i) : m), 0));
      const city = roundTrip.city as { ru?: string | null; en?: string | null } | null | undefined;
      const text = (start: number, end: number) => (start < 0 ? '' : Buffer.from(bytes.subarray(start, end)).toString('utf8'));
      assert.is(text(decoder.ruStart, decoder.ruEnd), city?.ru ?? '');
      assert.is(text(decoder.enStart, decoder.enEnd), city?.en ?? '');
      assert.is(decoder.asn, (roundTrip.asn as number | null) ?? 0);
      assert.is(text(decoder.orgStart, decoder.orgEnd), (roundTrip.org as string | null) ?? '');
      assert.is(decoder.orgStart >= 0, typeof roundTrip.org === 'string');
      const flag = (v: unknown) => (typeof v === 'boolean' ? Number(v) : -1);
      assert.equal([decoder.hosting, decoder.mobile], [flag(roundTrip.hosting), flag(roundTrip.mobile)]);
    }),
    { numRuns: 5000, seed: 20261122 },
  );
  assert.ok(valid > 500, `only ${valid} valid records were generated`);
});

test('wider encodings: map16, str8/str16, array16, uint64 and negative ints', () => {
  const decoder = new RecordDecoder(DEFAULT_SERVICES);
  const wide: Record<string, unknown> = { ip: '10.0.0.1', port: 8080, type: 'http', anon: 'elite', ping_ms: 12, checked_at: 2 ** 32 - 1, country: 'us', works: 100, city: { ru: 'Я'.repeat(128), en: 'x'.repeat(256) } };
  for (let i = 0; i < 20; i++) wide[`pad${i}`] = i - 10; // map16, negative fixints
  wide.services = Array.from({ length: 20 }, (_, i) => DEFAULT_SERVICES[i % 5]); // array16
  const bytes = packr.pack(wide);
  assert.is(decoder.read(bytes, 0), bytes.length);
  assert.is(decoder.problem, null);
  assert.is(decoder.enEnd - decoder.enStart, 256);
  assert.is(decoder.checkedAt, 2 ** 32 - 1);
  assert.is(decoder.services, 31);
});

test('a city name longer than 256 bytes skips its record: a snapshot field cannot make the store grow without bound', () => {
  const decoder = new RecordDecoder(DEFAULT_SERVICES);
  const base = { ip: '10.0.0.1', port: 8080, type: 'http', anon: 'elite', ping_ms: 12, checked_at: 1, country: 'us', works: 1 };
  const bytes = packr.pack({ ...base, city: { ru: 'Я'.repeat(5000), en: 'Moscow' } });
  assert.is(decoder.read(bytes, 0), bytes.length);
  assert.is(decoder.problem, 'city.ru is longer than 256 bytes');
  decoder.read(packr.pack({ ...base, city: { en: 'x'.repeat(257) } }), 0);
  assert.is(decoder.problem, 'city.en is longer than 256 bytes');
});

test('the exit network fields: each wrong value skips its record with its own reason, in the contract order', () => {
  const decoder = new RecordDecoder(DEFAULT_SERVICES);
  const base = { ip: '10.0.0.1', port: 8080, type: 'http', anon: 'elite', ping_ms: 12, checked_at: 1, country: 'us', works: 1 };
  const reasons: Array<[Record<string, unknown>, string | null]> = [
    [{ asn: 13335, org: 'Cloudflare, Inc.', hosting: true, mobile: false }, null],
    [{ asn: null, org: null, hosting: null, mobile: null }, null],
    [{ asn: 0 }, 'asn is not an integer in 1..4294967295'],
    [{ asn: 2 ** 32 }, 'asn is not an integer in 1..4294967295'],
    [{ asn: 'AS13335' }, 'asn is not an integer in 1..4294967295'],
    [{ org: 7 }, 'org is not a string'],
    [{ org: 'x'.repeat(257) }, 'org is longer than 256 bytes'],
    [{ hosting: 1 }, 'hosting is not a boolean'],
    [{ mobile: 'true' }, 'mobile is not a boolean'],
    [{ asn: -5, mobile: 0 }, 'asn is not an integer in 1..4294967295'],
    [{ works: 101, asn: 0 }, 'works is not an integer in 0..100'],
  ];
  for (const [fields, reason] of reasons) {
    const record = { ...base, ...fields };
    const bytes = packr.pack(record);
    assert.is(decoder.read(bytes, 0), bytes.length);
    assert.is(decoder.problem, reason, JSON.stringify(fields));
    assert.is(recordProblem(packr.unpack(bytes), DEFAULT_SERVICES), reason, `the reference: ${JSON.stringify(fields)}`);
  }
});

test('a truncated record throws as truncated, never reads past the end', () => {
  const decoder = new RecordDecoder(DEFAULT_SERVICES);
  const bytes = packr.pack({ ip: '10.0.0.1', port: 8080, type: 'http', anon: 'elite', ping_ms: 12.5, checked_at: 1, country: 'us', works: 1, city: { ru: 'Москва' } });
  for (let cut = 0; cut < bytes.length; cut++) {
    assert.throws(() => decoder.read(bytes.subarray(0, cut), 0), /unexpected end of data/, `cut at ${cut}`);
  }
});

test.run();
