import * as assert from 'uvu/assert';
import { encodeSnapshot } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, serverSuite } from '../helpers/server.js';

/** IPv6 in snapshots and answers (docs/api.md, IPv6), on the engine the run selects. */

const base = { type: 'http', anon: 'elite', ping_ms: 100, country: 'DE', works: 90 };
/** ip_out as checkers write it, and as the service writes it back (RFC 5952; a mapped address is its IPv4). */
const EXITS: Array<[string, string]> = [
  ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
  ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
  ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
  ['::ffff:198.51.100.9', '198.51.100.9'],
  ['2001:db8::7:0.0.0.1', '2001:db8::7:0:1'],
  ['FE80:0:0:0:ABCD:0:0:0', 'fe80::abcd:0:0:0'],
  ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
];
/** ip_out values that are no address of either family: each record is skipped. */
const BAD_EXITS = ['fe80::1%eth0', '[2001:db8::1]', '[2001:db8::1]:8080', '2001:db8::1::2', '2001:db8::g', '1.2.3.4::'];

const records = [
  ...EXITS.map(([ip_out], i) => ({ ...base, ip: `198.51.100.${10 + i}`, port: 8080, ip_out, checked_at: TEST_NOW_S - 10 - i })),
  ...BAD_EXITS.map((ip_out, i) => ({ ...base, ip: `203.0.113.${10 + i}`, port: 8080, ip_out, checked_at: TEST_NOW_S - 10 })),
];

const exits = serverSuite('IPv6 exits', () => ({ snapshot: encodeSnapshot(records, TEST_NOW_S) }));

exits('ip_out is written in RFC 5952 form, never bracketed; a mapped address as its IPv4', async ({ t }) => {
  const got = (await (await t.api('get=json&fields=ip,ip_out&pretty=0')).json()) as Array<{ ip: string; ip_out: string }>;
  assert.equal(got, EXITS.map(([, text], i) => ({ ip: `198.51.100.${10 + i}:8080`, ip_out: text })));
  const object = (await (await t.api('get=json&format=object&fields=ip_out&wrap=1')).json()) as { data: Record<string, { ip_out: string }> };
  assert.equal(Object.values(object.data).map((r) => r.ip_out), EXITS.map(([, text]) => text));
});

exits('records whose ip_out is not an address are skipped and counted; /health counts the IPv6 exits', async ({ t }) => {
  const health = (await (await t.get('/health')).json()) as { snapshot: { records: number; ipv6_exits: number; skipped: number; skip_reasons: Record<string, number> } };
  assert.is(health.snapshot.records, EXITS.length);
  assert.is(health.snapshot.ipv6_exits, EXITS.length - 1, 'the mapped one is IPv4');
  assert.is(health.snapshot.skipped, BAD_EXITS.length);
  assert.equal(health.snapshot.skip_reasons, { 'ip_out is not an IPv4 or IPv6 address': BAD_EXITS.length });
});

exits.run();
