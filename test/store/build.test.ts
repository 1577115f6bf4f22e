import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { buildFromRecords } from '../helpers/build-store.js';
import { Store } from '../../src/store/store.js';
import { ColumnArena } from '../../src/store/arena.js';
import { columnBuffers } from '../../src/store/columns.js';
import type { SnapshotRecord } from '../../src/snapshot/format.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';

const hasBit = (words: Uint32Array, r: number): boolean => (words[r >>> 5] & (1 << (r & 31))) !== 0;

const base: SnapshotRecord = { ip: '10.0.0.1', port: 80, type: 'http', anon: 'elite', ping_ms: 100, checked_at: 1000, country: 'us', works: 50 };
const build = (proxies: unknown[], services?: string[]) => {
  const { columns, meta } = buildFromRecords(proxies, services);
  return new Store(columns, meta, { file: 'x', loadedAtMs: 0, generation: 1 });
};
const lines = (s: Store): string[] => Buffer.from(s.c.lines.bytes).toString().split('\n').slice(0, -1);

const test = suite('store build');

test('rows are in output order: checked_at desc, ping asc, address, port, type', () => {
  const s = build([
    { ...base, ip: '10.0.0.2', checked_at: 1000 },
    { ...base, ip: '9.0.0.1', checked_at: 1000 },
    { ...base, ip: '10.0.0.1', port: 81, checked_at: 1000 },
    { ...base, ip: '10.0.0.1', port: 80, type: 'socks5', checked_at: 1000 },
    { ...base, ip: '10.0.0.1', port: 80, type: 'https', checked_at: 1000 },
    { ...base, ip: '1.1.1.1', ping_ms: 99.4, checked_at: 1000 },
    { ...base, ip: '1.1.1.2', ping_ms: 99.6, checked_at: 1000 },
    { ...base, ip: '0.0.0.1', ping_ms: 150, checked_at: 1000 },
    { ...base, ip: '200.0.0.1', checked_at: 1001 },
  ]);
  assert.equal(lines(s), ['200.0.0.1:80', '1.1.1.1:80', '1.1.1.2:80', '9.0.0.1:80', '10.0.0.1:80', '10.0.0.1:80', '10.0.0.1:81', '10.0.0.2:80', '0.0.0.1:80']);
  // 99.6 rounds to 100 ms and ties with the others there: the address decides.
  assert.equal(Array.from(s.c.pingRank.subarray(1, 5), (k) => s.c.pingValues[k]), [99, 100, 100, 100]);
  assert.equal(Array.from(s.c.type.subarray(4, 6)), [1, 3]);
});

test('of duplicates the latest checked_at is kept, and on a tie the later in the file', () => {
  const s = build([
    { ...base, works: 1, checked_at: 900 },
    { ...base, works: 2, checked_at: 1000 },
    { ...base, works: 3, checked_at: 950 },
    { ...base, ip: '10.0.0.9', works: 4 },
    { ...base, ip: '10.0.0.9', works: 5 },
    { ...base, type: 'socks4', works: 6 },
  ]);
  assert.is(s.rows, 3);
  assert.is(s.meta.duplicates, 3);
  const works = new Map(lines(s).map((l, r) => [`${l}/${s.c.type[r]}`, s.c.works[r]]));
  assert.is(works.get('10.0.0.1:80/0'), 2);
  assert.is(works.get('10.0.0.9:80/0'), 5);
  assert.is(works.get('10.0.0.1:80/2'), 6);
});

test('invalid records are skipped, counted and explained', () => {
  const s = build([base, { ...base, ip: '01.2.3.4' }, { ...base, ping_ms: Infinity }, { ...base, ping_ms: NaN }, { ...base, checked_at: 1.5 }, { ...base, country: 'USA' }, { ...base, city: 'Moscow' }, { ...base, ip_out: 'x' }, null]);
  assert.is(s.rows, 1);
  assert.is(s.meta.skipped, 8);
  assert.match(s.meta.skipReasons[0], 'record 1: ip is not an IPv4 or IPv6 address');
  assert.match(s.meta.skipReasons[1], 'record 2: ping_ms');
});

test('optional fields: null and missing are alike, ip_out falls back to ip', () => {
  const s = build([{ ...base, ip_out: null, city: null, services: null }, { ...base, ip: '10.0.0.3', ip_out: '8.8.8.8', city: { en: 'Oslo' } }]);
  assert.is(s.rows, 2);
  const ipOut = (r: number) => [24, 16, 8, 0].map((shift) => (s.c.ipOut[r] >>> shift) & 255).join('.');
  assert.equal([ipOut(0), ipOut(1)], ['10.0.0.1', '8.8.8.8']);
  assert.equal(s.meta.cities[s.c.city[1]], { ru: '', en: 'Oslo' });
});

test('bitsets agree with the columns, and custom services are honoured', () => {
  const records = generateRecords({ records: 3000, seed: 11, now: 2000000 }).map((r) => ({ ...r, services: (r.services ?? []).map((x) => (x === 'avito' ? 'Ozon' : x)) }));
  const services = ['smtp', 'telegram', 'Ozon', 'google', 'the service'];
  const s = build(records, services);
  const ref = new NaiveEngine({ services, proxies: records });
  assert.is(s.rows, ref.records.length);
  for (let r = 0; r < s.rows; r++) {
    for (let t = 0; t < 4; t++) assert.is(hasBit(s.typeSets[t], r), s.c.type[r] === t);
    for (let i = 0; i < services.length; i++) assert.is(hasBit(s.serviceSets[i], r), ((s.c.services[r] >>> i) & 1) === 1);
    assert.ok(hasBit(s.countrySets[s.c.country[r]], r));
  }
  assert.is(s.serviceId.get('ozon'), 2);
});

test('services take the narrowest column their count fits, and every bit of 32 is kept', () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);
  for (const [count, kind] of [[5, Uint8Array], [8, Uint8Array], [9, Uint16Array], [16, Uint16Array], [17, Uint32Array], [32, Uint32Array]] as const) {
    const services = names(count);
    const records = services.map((name, i) => ({ ...base, ip: `10.0.1.${i + 1}`, services: [name, services[0]] }));
    const s = build(records, services);
    assert.instance(s.c.services, kind, `${count} services`);
    for (let r = 0; r < s.rows; r++) {
      const i = (s.c.ip[r] & 255) - 1;
      assert.is(s.c.services[r] >>> 0, ((1 << i) | 1) >>> 0, `${count} services, record of ${services[i]}`);
      assert.ok(hasBit(s.serviceSets[i], r));
    }
  }
});

test('the build\'s scratch is detached before the last columns are written, and release is called then', () => {
  let calls = 0;
  let scratchLeft = -1;
  let pingViewLength = -1;
  const records = generateRecords({ records: 500, seed: 3, now: 2000000 });
  const { columns } = buildFromRecords(records, undefined, 0, (x) => {
    calls++;
    scratchLeft = x.columns.scratch.byteLength;
    pingViewLength = x.columns.ping.length;
  });
  assert.is(calls, 1);
  assert.is(scratchLeft, 0, 'the scratch has no bytes when release is called');
  assert.is(pingViewLength, 0, 'views of the scratch are empty');
  assert.ok(columns.lines.off[columns.rows] > 0);
  // The store is whole without it.
  assert.is(new Store(columns, buildFromRecords(records).meta, { file: 'x', loadedAtMs: 0, generation: 1 }).rows, columns.rows);
});

test('the time prefix is found by binary search', () => {
  const s = build([1000, 999, 999, 998, 500].map((t, i) => ({ ...base, ip: `10.0.0.${i + 1}`, checked_at: t })));
  assert.is(s.prefixEnd(1001), 0);
  assert.is(s.prefixEnd(1000), 1);
  assert.is(s.prefixEnd(999), 3);
  assert.is(s.prefixEnd(501), 4);
  assert.is(s.prefixEnd(-5), 5);
});

test('a store\'s row columns are carved from two buffers; what else it holds grows with distinct values, not rows', () => {
  const { columns } = buildFromRecords(generateRecords({ records: 20_000, seed: 44, now: 1_800_000_000 }));
  const buffers = columnBuffers(columns);
  assert.ok(buffers.every((b) => b instanceof SharedArrayBuffer), 'every column in shared memory, for every serving thread to read');
  const kept = columns.ip.buffer;
  const derived = columns.lines.bytes.buffer;
  assert.is.not(kept, derived);
  for (const v of [columns.ip, columns.pingRank, columns.timeRank, columns.ipOut, columns.services]) assert.is(v.buffer, kept, 'a column read from the records');
  for (const v of [columns.lines.bytes, columns.countryBits.data, columns.cityRows, columns.byWorks, columns.addrId]) assert.is(v.buffer, derived, 'a derived column');
  const rest = buffers.filter((b) => b !== kept && b !== derived).reduce((n, b) => n + b.byteLength, 0);
  const distinct = columns.pingValues.length + columns.times.length;
  assert.ok(distinct < columns.rows / 2, `fewer distinct pings and times than rows: ${distinct}`);
  assert.ok(rest <= distinct * 40 + 4096, `${rest} bytes for ${distinct} distinct values`);
});

test('pings and times are ranks into their distinct values; the ping bound is a rank', () => {
  const s = build([300, 100, 200, 100, 0].map((ping_ms, i) => ({ ...base, ip: `10.0.0.${i + 1}`, ping_ms, checked_at: 1000 - (i % 2) })));
  assert.equal(Array.from(s.c.pingValues), [0, 100, 200, 300]);
  assert.equal(Array.from(s.c.times), [1000, 999]);
  assert.equal(Array.from(s.c.timeRank), [0, 0, 0, 1, 1]);
  assert.is(s.pingRankAtMost(-1), -1);
  assert.is(s.pingRankAtMost(99), 0);
  assert.is(s.pingRankAtMost(100), 1);
  assert.is(s.pingRankAtMost(1e9), 3);
});

test('ranks take 16 bits while at most 65,536 values are distinct, 32 beyond', () => {
  const narrow = build([300, 100].map((ping_ms, i) => ({ ...base, ip: `10.0.0.${i + 1}`, ping_ms })));
  assert.instance(narrow.c.pingRank, Uint16Array);
  assert.instance(narrow.c.timeRank, Uint16Array);
  const n = 65_537;
  const wide = build(Array.from({ length: n }, (_, i) => ({ ...base, ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, ping_ms: i, checked_at: 100_000 + i })));
  assert.instance(wide.c.pingRank, Uint32Array);
  assert.instance(wide.c.timeRank, Uint32Array);
  assert.is(wide.rows, n);
  for (let r = 0; r < n; r++) {
    // Freshest first: row r was checked at 100_000 + n - 1 - r, with that ping.
    assert.is(wide.c.times[wide.c.timeRank[r]], 100_000 + n - 1 - r);
    assert.is(wide.c.pingValues[wide.c.pingRank[r]], n - 1 - r);
  }
  assert.is(wide.pingRankAtMost(65_536), 65_536);
});

test('network ids take 8 bits while they fit, then 16, then 32, each row keeping its network', () => {
  const withNetworks = (count: number, every = 1) =>
    build(Array.from({ length: count * every }, (_, i) => ({ ...base, ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, checked_at: 100_000 + i, asn: 1 + Math.floor(i / every) })));
  assert.instance(build([base]).c.network, Uint8Array, 'no network at all: 8 bits');
  for (const [count, every, kind] of [[255, 2, Uint8Array], [256, 1, Uint16Array], [65_535, 1, Uint16Array], [65_536, 1, Uint32Array]] as const) {
    const s = withNetworks(count, every);
    assert.instance(s.c.network, kind, `${count} networks`);
    assert.is(s.meta.networks.length, count + 1);
    // Freshest first: row r is record count * every - 1 - r, of AS number 1 + its index / every.
    for (let r = 0; r < s.rows; r++) assert.is(s.meta.networks[s.c.network[r]].asn, 1 + Math.floor((s.rows - 1 - r) / every), `row ${r} of ${count} networks`);
  }
});

test('a column arena that runs out of room gives columns of their own, never an error', () => {
  const arena = new ColumnArena(16);
  const a = arena.u32(3);
  const b = arena.u32(3);
  assert.is(a.buffer, arena.buffer);
  assert.is.not(b.buffer, arena.buffer);
  b.set([1, 2, 3]);
  assert.equal([...arena.copy(b)], [1, 2, 3]);
  // Cut to size, the room after a buffer's last bytes is taken again.
  const wide = new ColumnArena(64);
  const room = wide.u8(40);
  const cut = wide.shrink(room, 10);
  assert.is(cut.length, 10);
  assert.is(wide.u8(8).byteOffset, 16);
});

test.run();
