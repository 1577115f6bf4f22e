import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, eventually, serverSuite } from '../helpers/server.js';

/** IPv6 in snapshots and answers (docs/api.md, IPv6), on the engine the run selects. */

const base = { type: 'http', anon: 'elite', ping_ms: 100, country: 'DE', works: 90, checked_at: TEST_NOW_S - 10 };
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
/** Addresses that are no address of either family, in any of the forms a checker may get wrong: each record is skipped. */
const BAD = ['fe80::1%eth0', '[2001:db8::1]', '[2001:db8::1]:8080', '2001:db8::1::2', '2001:db8::g', '1.2.3.4::'];

/**
 * Entries of both families with the same check and ping, so that the
 * address orders them: IPv4 first, then IPv6 by value, then port and type.
 * The same IPv6 address is written in three forms.
 */
const ENTRIES = [
  { ...base, ip: 'fe80::1', port: 80 },
  { ...base, ip: '2001:DB8::1', port: 8080 },
  { ...base, ip: '2001:0db8:0000:0000:0000:0000:0000:0001', port: 1080, type: 'socks5' },
  { ...base, ip: '2001:db8::1', port: 1080, type: 'socks4' },
  { ...base, ip: '2001:db8::7:1.2.3.4', port: 80, ip_out: '198.51.100.77' },
  { ...base, ip: '::ffff:198.51.100.200', port: 3128 },
  { ...base, ip: '198.51.100.3', port: 80 },
];
/** The list of ENTRIES, in order, as TXT writes it. */
const LINES = ['198.51.100.3:80', '198.51.100.200:3128', '[2001:db8::1]:1080', '[2001:db8::1]:1080', '[2001:db8::1]:8080', '[2001:db8::7:102:304]:80', '[fe80::1]:80'];
const TYPES = ['http', 'http', 'socks4', 'socks5', 'http', 'http', 'http'];

const records = [
  ...EXITS.map(([ip_out], i) => ({ ...base, ip: `198.51.100.${10 + i}`, port: 8080, ip_out, checked_at: TEST_NOW_S - 100 - i })),
  ...ENTRIES,
  ...BAD.map((ip_out, i) => ({ ...base, ip: `203.0.113.${10 + i}`, port: 8080, ip_out })),
  ...BAD.map((ip) => ({ ...base, ip, port: 8080 })),
];

// The entries are the records checked in the last 50 seconds (time=50), the exits' before.
const v6 = serverSuite('IPv6 entries and exits', () => ({ snapshot: encodeSnapshot(records, TEST_NOW_S) }));
const text = async (res: Response): Promise<string> => {
  assert.is(res.status, 200, await res.clone().text());
  return res.text();
};
const json = async <T>(res: Response): Promise<T> => JSON.parse(await text(res)) as T;

v6('ip_out is written in RFC 5952 form, never bracketed; a mapped address as its IPv4', async ({ t }) => {
  const got = await json<Array<{ ip: string; ip_out: string }>>(await t.api('get=json&fields=ip,ip_out&pretty=0&time=200&ipv=4'));
  const exits = got.filter((r) => r.ip.endsWith(':8080'));
  assert.equal(exits, EXITS.map(([, out], i) => ({ ip: `198.51.100.${10 + i}:8080`, ip_out: out })));
  // A record without ip_out leaves from its entry, IPv6 too.
  const entries = await json<Array<{ ip: string; ip_out: string }>>(await t.api('get=json&fields=ip,ip_out&pretty=0&ipv=6'));
  assert.equal(entries.map((r) => r.ip_out), ['2001:db8::1', '2001:db8::1', '2001:db8::1', '198.51.100.77', 'fe80::1']);
});

v6('IPv6 entries: canonical, bracketed before a port in TXT, type prefixes and JSON, bare with split_ip, and after every IPv4 address by value', async ({ t }) => {
  assert.is(await text(await t.api('time=50')), LINES.map((l) => `${l}\n`).join(''));
  assert.is(await text(await t.api('type_prefix=1&time=50')), LINES.map((l, i) => `${TYPES[i]}://${l}\n`).join(''));
  const rows = await json<Array<{ ip: string }>>(await t.api('get=json&fields=ip&pretty=0&time=50'));
  assert.equal(rows.map((r) => r.ip), LINES);
  const split = await json<Array<{ ip: string; port: string }>>(await t.api('get=json&fields=ip,port&split_ip=1&pretty=0&time=50'));
  assert.equal(split.map((r) => `${r.ip} ${r.port}`), LINES.map((l) => l.replace(/^\[?([^\]]*?)\]?:(\d+)$/, '$1 $2')));
  const object = await json<Record<string, unknown>>(await t.api('get=json&format=object&fields=type&pretty=0&time=50'));
  // One record per address: the socks5 record of [2001:db8::1]:1080 goes, the socks4 one stays (first in the order).
  assert.equal(Object.keys(object), [...new Set(LINES)]);
});

v6('ip matches by value, in any form, bare or with a port; ipv keeps a family and is echoed after ip', async ({ t }) => {
  const ips = async (query: string) => (await json<Array<{ ip: string }>>(await t.api(`get=json&fields=ip&pretty=0&time=50&${query}`))).map((r) => r.ip);
  assert.equal(await ips('ip=2001:0DB8:0:0::1'), ['[2001:db8::1]:1080', '[2001:db8::1]:1080', '[2001:db8::1]:8080']);
  assert.equal(await ips('ip=[2001:db8:0:0:0:0:0:1]:8080,[fe80::1]:81'), ['[2001:db8::1]:8080']);
  assert.equal(await ips('ip=::ffff:198.51.100.200'), ['198.51.100.200:3128']);
  assert.equal(await ips(`ip=${encodeURIComponent('[2001:db8::7:1.2.3.4]:80')}`), ['[2001:db8::7:102:304]:80']);
  assert.equal(await ips('ip=2001:db8::2'), []);
  assert.equal(await ips('ipv=6'), LINES.slice(2));
  assert.equal(await ips('ipv=4'), LINES.slice(0, 2));
  assert.equal(await ips('ipv=6,4,6'), LINES);
  const wrapped = await json<{ filters: Record<string, unknown> }>(await t.api('get=json&wrap=1&time=50&ip=fe80::1&ipv=6,6'));
  assert.equal(wrapped.filters, { time: 50, ip: ['fe80::1'], ipv: [6] });
  for (const bad of ['ipv=5', 'ipv=v6', 'get=json&ip=[2001:db8::1]', 'get=json&ip=2001:db8::1::2', 'get=json&ip=[2001:db8::1]:0']) {
    const res = await t.api(bad);
    assert.is(res.status, 400, bad);
    assert.match(await res.text(), /^Error: Invalid (ipv|ip) /, bad);
  }
});

v6('records whose ip or ip_out is not an address are skipped and counted; /health counts both families', async ({ t }) => {
  const health = (await (await t.get('/health')).json()) as { snapshot: { records: number; ipv6_entries: number; ipv6_exits: number; skipped: number; skip_reasons: Record<string, number> } };
  assert.is(health.snapshot.records, EXITS.length + ENTRIES.length);
  assert.is(health.snapshot.ipv6_entries, 5);
  // The exits of the list above but the mapped one, and four IPv6 entries without an exit of their own.
  assert.is(health.snapshot.ipv6_exits, EXITS.length - 1 + 4);
  assert.equal(health.snapshot.skip_reasons, { 'ip is not an IPv4 or IPv6 address': BAD.length, 'ip_out is not an IPv4 or IPv6 address': BAD.length });
});

v6('change sets name IPv6 keys bracketed, and ipv belongs to the selection a cursor names', async ({ t }) => {
  const first = await t.api('ipv=6&type_prefix=1');
  await first.text();
  const cursor = first.headers.get('list-cursor')!;
  const next = ENTRIES.filter((r) => r.port !== 8080).map((r) => (r.ip === 'fe80::1' ? { ...r, works: 40 } : r));
  writeFileAtomic(t.snapshot, encodeSnapshot([...records.filter((r) => !ENTRIES.includes(r)), ...next], TEST_NOW_S + 1));
  await eventually(async () => (await (await t.get('/health')).json()).snapshot.records === EXITS.length + ENTRIES.length - 1, 10_000, 'the next snapshot');
  assert.is(await text(await t.api(`ipv=6&type_prefix=1&since=${cursor}`)), '+http://[fe80::1]:80\n-http://[2001:db8::1]:8080\n');
  const changes = await json<{ upsert: Record<string, unknown>; remove: string[] }>(await t.api(`ipv=6&get=json&fields=works&pretty=0&since=${cursor}`));
  assert.equal(changes.upsert, { 'http://[fe80::1]:80': { works: '40' } });
  assert.equal(changes.remove, ['http://[2001:db8::1]:8080']);
  const other = await t.api(`ipv=4&since=${cursor}`);
  assert.is(other.status, 400);
  assert.match(await other.text(), /cursor was issued for other filters/);
});

v6.run();
