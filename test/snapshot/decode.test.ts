import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSnapshotFile } from '../../src/snapshot/decode.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine, addressOf } from '../reference/naive-engine.js';
import { TEST_NOW_S, tempDir } from '../helpers/server.js';

const dir = tempDir();
const lines = (c: { rows: number; lines: { bytes: Uint8Array; off: Uint32Array } }) => Buffer.from(c.lines.bytes.subarray(0, c.lines.off[c.rows])).toString();

const test = suite('reading a snapshot file a window at a time');

test('a file several windows long reads as the reference reads its whole bytes', () => {
  const records: unknown[] = generateRecords({ records: 40_000, seed: 31, now: TEST_NOW_S });
  // One record far larger than a window: an unknown key with a 9 MB value, and the longest city name; then one whose city name is too long.
  records.splice(20_000, 0, { ...(records[0] as object), ip: '198.51.100.1', padding: 'x'.repeat(9_000_000), city: { ru: 'Д'.repeat(128) } });
  records.splice(30_000, 0, { ...(records[0] as object), ip: '198.51.100.2', city: { ru: 'Д'.repeat(100_000) } });
  const bytes = encodeSnapshot(records, TEST_NOW_S);
  assert.ok(bytes.length > 12 * 1024 * 1024, 'spans several windows');
  const file = join(dir, 'big.msgpack');
  writeFileSync(file, bytes);
  const fromFile = loadSnapshotFile(file);
  const reference = NaiveEngine.fromFile(bytes);
  assert.is(fromFile.columns.rows, reference.records.length);
  assert.is(lines(fromFile.columns), reference.records.map((r) => `${addressOf(r)}\n`).join(''));
  assert.ok(fromFile.meta.cities.some((c) => c.ru.length === 128));
  assert.not.ok(lines(fromFile.columns).includes('198.51.100.2:'), 'the record with a 200 KB city name is skipped');
});

test('records that do not come last, and bytes after the last record', () => {
  const packr = new Packr({ useRecords: false });
  const proxies = generateRecords({ records: 3000, seed: 2, now: TEST_NOW_S });
  const first = join(dir, 'first.msgpack');
  writeFileSync(first, packr.pack({ proxies, format: 'proxylist.snapshot', version: 1, generated_at: 5, services: ['smtp', 'telegram', 'avito', 'google', 'the service'] }));
  assert.is(loadSnapshotFile(first).columns.rows, new NaiveEngine({ proxies }).records.length);
  const trailing = join(dir, 'trailing.msgpack');
  writeFileSync(trailing, Buffer.concat([encodeSnapshot(proxies, 5), Buffer.from([0xc0])]));
  assert.throws(() => loadSnapshotFile(trailing), /bytes follow the snapshot/);
  const cut = join(dir, 'cut.msgpack');
  const whole = encodeSnapshot(proxies, 5);
  writeFileSync(cut, whole.subarray(0, whole.length - 3));
  assert.throws(() => loadSnapshotFile(cut), /truncated/);
});

test('who runs each exit: kept per row as the records say, each network once, flags known or not', () => {
  const proxies: unknown[] = generateRecords({ records: 5000, seed: 41, now: TEST_NOW_S });
  proxies.push({ ...(proxies[0] as object), ip: '198.51.100.3', asn: 64500, org: '' }, { ...(proxies[0] as object), ip: '198.51.100.4', asn: null, org: 'Only a name', hosting: null, mobile: true });
  const file = join(dir, 'networks.msgpack');
  writeFileSync(file, encodeSnapshot(proxies, TEST_NOW_S));
  const { columns: c, meta } = loadSnapshotFile(file);
  // Read without a database: what the snapshot says.
  const reference = NaiveEngine.fromFile(encodeSnapshot(proxies, TEST_NOW_S), { asnDb: false }).records;
  assert.is(c.rows, reference.length);
  const byLine = new Map(reference.map((r) => [`${addressOf(r)}/${r.type}`, r]));
  const types = ['http', 'https', 'socks4', 'socks5'];
  const flag = (v: boolean | null | undefined, known: number, set: number) => (typeof v === 'boolean' ? known | (v ? set : 0) : 0);
  for (let row = 0; row < c.rows; row++) {
    const line = Buffer.from(c.lines.bytes.subarray(c.lines.off[row], c.lines.off[row + 1] - 1)).toString();
    const r = byLine.get(`${line}/${types[c.type[row]]}`)!;
    assert.equal(meta.networks[c.network[row]], { asn: r.asn ?? 0, org: r.org ?? '' }, line);
    assert.is(c.netFlags[row], flag(r.hosting, 1, 2) | flag(r.mobile, 4, 8), line);
  }
  assert.equal(meta.networks[0], { asn: 0, org: '' }, 'id 0 is unknown');
  const keys = meta.networks.map((n) => `${n.asn} ${n.org}`);
  assert.is(new Set(keys).size, keys.length, 'each network once');
  assert.ok(meta.networks.length < 40, `${meta.networks.length} networks for ${c.rows} rows`);
});

test('a service named like an exit network field is refused: both would be JSON keys', () => {
  for (const name of ['asn', 'Org', 'hosting', 'MOBILE']) {
    const file = join(dir, `service-${name}.msgpack`);
    writeFileSync(file, encodeSnapshot([], TEST_NOW_S, ['smtp', name]));
    assert.throws(() => loadSnapshotFile(file), new RegExp(`services: "${name}" clashes with a record field`));
  }
});

test.run();
