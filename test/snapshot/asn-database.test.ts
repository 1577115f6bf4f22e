import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot } from '../../src/snapshot/generate.js';
import { lookUpAsn } from '../reference/naive-asn.js';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { parseAsnDb } from '../../src/snapshot/exit-networks.js';
import { runCliSync } from '../helpers/cli.js';
import { writeMmdb, type MmdbNetwork } from '../helpers/mmdb.js';
import { TEST_NOW_S, eventually, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/**
 * Who runs an exit the checker does not place (docs/snapshot.md): the AS
 * number and organisation of its address in the default database, looked
 * up when the snapshot is built; the checker's values always win.
 */
const base = { port: 8080, type: 'http', anon: 'elite', ping_ms: 100, checked_at: TEST_NOW_S - 10, country: 'US', works: 90 };
const records = [
  { ...base, ip: '198.51.100.1', ip_out: '1.1.1.1' }, // nothing said: the database's
  { ...base, ip: '198.51.100.2', ip_out: '1.1.1.1', asn: 64500 }, // another AS number said: the checker's, no organisation
  { ...base, ip: '198.51.100.3', ip_out: '1.1.1.1', asn: 13335 }, // the same AS number: its organisation from the database
  { ...base, ip: '198.51.100.4', ip_out: '1.1.1.1', org: 'As the checker says' }, // an organisation said: the database's number, the checker's name
  { ...base, ip: '198.51.100.5', ip_out: '10.0.0.1' }, // private space: no network announces it
  { ...base, ip: '198.51.100.6', ip_out: '2001:4860:4860::8888' }, // an IPv6 exit
  { ...base, ip: '8.8.8.8' }, // no ip_out: the entry is the exit
  { ...base, ip: '198.51.100.8', ip_out: '1.1.1.1', asn: 7922, org: 'Comcast Cable Communications, LLC', hosting: false }, // all said: as said
];
const snapshot = encodeSnapshot(records, TEST_NOW_S);
const query = 'get=json&pretty=0&time=99999&fields=ip,asn,org,hosting&sort=works';
type Row = { ip: string; asn: number | null; org: string; hosting: boolean | null };

const test = suite('the default IP-to-ASN database');

async function rows(t: TestServer): Promise<Map<string, Row>> {
  const res = await t.api(query);
  assert.is(res.status, 200);
  return new Map(((await res.json()) as Row[]).map((r) => [r.ip.replace(/:8080$/, ''), r]));
}

test('fills in what the checker does not say, by the exit address, and never overrides it', async () => {
  const cloudflare = lookUpAsn('1.1.1.1')!;
  const google = lookUpAsn('8.8.8.8')!;
  assert.equal(cloudflare, { asn: 13335, org: 'Cloudflare, Inc.' }, 'the package places 1.1.1.1');
  const t = await startTestServer({ snapshot });
  try {
    const r = await rows(t);
    assert.equal(r.get('198.51.100.1'), { ip: '198.51.100.1:8080', asn: 13335, org: cloudflare.org, hosting: null });
    assert.equal(r.get('198.51.100.2'), { ip: '198.51.100.2:8080', asn: 64500, org: '', hosting: null });
    assert.equal(r.get('198.51.100.3')?.org, cloudflare.org);
    assert.equal([r.get('198.51.100.4')?.asn, r.get('198.51.100.4')?.org], [13335, 'As the checker says']);
    assert.equal([r.get('198.51.100.5')?.asn, r.get('198.51.100.5')?.org], [null, '']);
    assert.equal([r.get('198.51.100.6')?.asn, r.get('198.51.100.6')?.org], [lookUpAsn('2001:4860:4860::8888')!.asn, lookUpAsn('2001:4860:4860::8888')!.org]);
    assert.equal([r.get('8.8.8.8')?.asn, r.get('8.8.8.8')?.org], [google.asn, google.org]);
    assert.equal(r.get('198.51.100.8'), { ip: '198.51.100.8:8080', asn: 7922, org: 'Comcast Cable Communications, LLC', hosting: false });
    // Filters see the filled-in values.
    const filtered = await (await t.api('time=99999&asn=AS13335&sort=works')).text();
    assert.equal(filtered.trim().split('\n').sort(), ['198.51.100.1:8080', '198.51.100.3:8080', '198.51.100.4:8080']);
    // The operator sees which database, of when, and how many rows it placed.
    const health = (await (await t.get('/health')).json()) as { snapshot: { asn_database: { name: string; date: string; records: number } } };
    assert.match(health.snapshot.asn_database.name, /^@ip-location-db\/asn \S+$/);
    assert.match(health.snapshot.asn_database.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.is(health.snapshot.asn_database.records, 4, 'the rows whose AS number it gave: 1, 4, 6 and 7');
  } finally {
    await t.close();
  }
});

test('--asn-db none: only what the checker says', async () => {
  const t = await startTestServer({ snapshot, options: { asnDb: 'none' } });
  try {
    const r = await rows(t);
    assert.equal([r.get('198.51.100.1')?.asn, r.get('198.51.100.1')?.org], [null, '']);
    assert.equal([r.get('198.51.100.3')?.asn, r.get('198.51.100.3')?.org], [13335, '']);
    assert.equal([r.get('198.51.100.4')?.asn, r.get('198.51.100.4')?.org], [null, 'As the checker says']);
    const health = (await (await t.get('/health')).json()) as { snapshot: { asn_database: unknown } };
    assert.is(health.snapshot.asn_database, null);
  } finally {
    await t.close();
  }
});

test('--asn-db FILE: an operator\'s MaxMind DB file, read again when it changes; a file of another kind refused', async () => {
  const dir = tempDir();
  const file = join(dir, 'asn.mmdb');
  const networks: MmdbNetwork[] = [
    { cidr: '1.1.1.0/24', record: { autonomous_system_number: 64501, autonomous_system_organization: 'Test Net, "One"' } },
    { cidr: '2001:4860::/32', record: { autonomous_system_number: 64502, autonomous_system_organization: 'Six Net' } },
    { cidr: '8.8.8.0/24', record: { autonomous_system_number: 'AS15169' } }, // not a number: no network
    { cidr: '198.51.100.0/24', record: { autonomous_system_number: 64503 } }, // no organisation
  ];
  writeFileSync(file, writeMmdb(networks, { buildEpochS: Date.UTC(2026, 9, 6) / 1000 }));
  const t = await startTestServer({ snapshot, options: { asnDb: parseAsnDb(file) } });
  try {
    const r = await rows(t);
    assert.equal(r.get('198.51.100.1'), { ip: '198.51.100.1:8080', asn: 64501, org: 'Test Net, "One"', hosting: null });
    assert.equal([r.get('198.51.100.2')?.asn, r.get('198.51.100.2')?.org], [64500, ''], 'the checker\'s number, another in the file: nothing taken');
    assert.equal([r.get('198.51.100.3')?.asn, r.get('198.51.100.3')?.org], [13335, ''], 'the checker\'s number, not the file\'s');
    assert.equal([r.get('198.51.100.4')?.asn, r.get('198.51.100.4')?.org], [64501, 'As the checker says']);
    assert.equal([r.get('198.51.100.6')?.asn, r.get('198.51.100.6')?.org], [64502, 'Six Net'], 'an IPv6 exit');
    assert.equal([r.get('8.8.8.8')?.asn, r.get('8.8.8.8')?.org], [null, ''], 'a record without a valid AS number places nothing');
    assert.equal(r.get('198.51.100.8'), { ip: '198.51.100.8:8080', asn: 7922, org: 'Comcast Cable Communications, LLC', hosting: false });
    const health = async () => ((await (await t.get('/health')).json()) as { snapshot: { asn_database: { name: string; date: string; records: number } } }).snapshot.asn_database;
    assert.equal(await health(), { name: 'GeoLite2-ASN (asn.mmdb)', date: '2026-10-06', records: 3 });

    // The operator replaces the file: the next snapshot is looked up in the new one.
    writeFileSync(file, writeMmdb([{ cidr: '1.1.0.0/16', record: { autonomous_system_number: 64510, autonomous_system_organization: 'Renumbered' } }], { buildEpochS: Date.UTC(2026, 10, 3) / 1000 }));
    const ok = t.server.feed.reloadsOk;
    writeFileAtomic(t.snapshot, encodeSnapshot(records, TEST_NOW_S + 1));
    await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, 'the next snapshot');
    assert.equal((await rows(t)).get('198.51.100.1')?.asn, 64510);
    assert.equal(await health(), { name: 'GeoLite2-ASN (asn.mmdb)', date: '2026-11-03', records: 2 });
  } finally {
    await t.close();
  }

  // A wrong file stops the start, in one line.
  const city = join(dir, 'city.mmdb');
  writeFileSync(city, writeMmdb(networks.slice(0, 1), { databaseType: 'GeoLite2-City' }));
  assert.throws(() => parseAsnDb(city), /^--asn-db .*city\.mmdb: a GeoLite2-City database, not an IP-to-ASN one/);
  writeFileSync(join(dir, 'garbage.mmdb'), 'not a database');
  assert.throws(() => parseAsnDb(join(dir, 'garbage.mmdb')), /^--asn-db .*garbage\.mmdb: not a MaxMind DB file/);
  assert.throws(() => parseAsnDb(join(dir, 'missing.mmdb')), /^--asn-db .*missing\.mmdb: ENOENT/);
  const served = runCliSync(['serve', '--snapshot', join(dir, 'none.msgpack'), '--keys', join(dir, 'keys.json'), '--asn-db', city, '--port', '0']);
  assert.is(served.status, 2);
  assert.match(served.stderr, /a GeoLite2-City database, not an IP-to-ASN one/);
  assert.is(served.stderr.trim().split('\n').length, 1, served.stderr);
  rmSync(dir, { recursive: true, force: true });
});

test.run();
