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

test.run();
