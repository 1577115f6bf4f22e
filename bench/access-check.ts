/**
 * The cost of the access check (key lookup by SHA-256, client subnet, the
 * three limits, the RateLimit fields) per request, and the memory per key
 * with 100,000 active keys. Run: npm run bench -- access
 */
import { parseAddress, subnetOf } from '../src/access/address.js';
import { KeyTable } from '../src/access/keys.js';
import { MemoryLimiter } from '../src/access/limiter.js';
import { rateFields } from '../src/access/rate-limit-headers.js';
import { round2, writeResult } from './harness.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const N = 200_000;
const nowMs = Date.parse('2026-11-22T12:00:00Z');

function check(table: KeyTable, limiter: MemoryLimiter, key: string, peer: string, i: number): boolean {
  const entry = table.find(key, nowMs);
  if (!entry) return false;
  const subnet = subnetOf(parseAddress(peer)!);
  const verdict = limiter.admit(entry, subnet, nowMs, i * 0.01);
  rateFields(entry, verdict.allowance ?? limiter.allowance(entry, nowMs, i * 0.01));
  return verdict.ok;
}

function nsPerCheck(label: string, keys: unknown[], pick: (i: number) => string): Record<string, unknown> {
  const table = KeyTable.parse(JSON.stringify({ keys }));
  const limiter = new MemoryLimiter();
  const peers = Array.from({ length: 16 }, (_, i) => `10.${i}.0.1`);
  for (let i = 0; i < 20_000; i++) check(table, limiter, pick(i), peers[i & 15], i); // warm-up
  let accepted = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) if (check(table, limiter, pick(i), peers[i & 7], i)) accepted++;
  const ns = Number(process.hrtime.bigint() - t0) / N;
  const row = { case: label, ns_per_check: Math.round(ns), accepted_share: round2(accepted / N) };
  console.log(JSON.stringify(row));
  return row;
}

const rows = [
  nsPerCheck('one unlimited key, accepted', [{ key: 'k', limits: { per_window: null, daily: null, subnets: null } }], () => 'k'),
  nsPerCheck('one key at the default limits, mostly refused (429)', [{ key: 'k' }], () => 'k'),
  nsPerCheck('1,000 keys with default limits', Array.from({ length: 1000 }, (_, i) => ({ key: `k${i}` })), (i) => `k${i % 1000}`),
  nsPerCheck('unknown key (401)', [{ key: 'k' }], () => 'nope'),
];

/**
 * What a crowd of keys costs (docs/operations.md, Memory): a keys file of
 * 1,000,000 keys read (time, bytes of its arrays), the usage table's room
 * reserved for them, then each key presented once from one subnet, as
 * clients would present it (a slice of a query string): RSS grown per key
 * seen, which counts the usage table (shared memory) and the strings the
 * table finds keys by.
 */
const CROWD = 1_000_000;
let text: string | null = JSON.stringify({ keys: Array.from({ length: CROWD }, (_, i) => ({ key: `crowd${String(i).padStart(7, '0')}` })) });
gc();
let t0 = performance.now();
const table = KeyTable.parse(text);
const loadMs = performance.now() - t0;
text = null;
const d = table.data;
const tableBytes = [d.ids, d.prefixes, d.expires, d.usableUntil, d.limitClass, d.classLimits, d.flags, d.nameOffsets, d.names, d.positions].reduce((n, a) => n + a.byteLength, 0);
const limiter = new MemoryLimiter();
t0 = performance.now();
limiter.reserve(CROWD);
const reserveMs = performance.now() - t0;
// What parsing left behind is collected, and its pages given back, before RSS is read.
for (let i = 0; i < 3; i++) gc();
await new Promise((resolve) => setTimeout(resolve, 1000));
gc();
const rss0 = process.memoryUsage().rss;
const heap0 = process.memoryUsage().heapUsed;
const usage0 = limiter.table.buffer.byteLength;
for (let i = 0; i < CROWD; i++) {
  const query = `type=http&key=crowd${String(i).padStart(7, '0')}&count=10`;
  limiter.admit(table.find(query.slice(14, 26), nowMs)!, subnetOf(parseAddress(`10.${i & 255}.0.1`)!), nowMs, i);
}
gc();
const memory = {
  keys: CROWD,
  load_ms: Math.round(loadMs),
  table_bytes_per_key: round2(tableBytes / CROWD),
  reserve_ms: Math.round(reserveMs),
  usage_table_bytes_reserved_per_key: round2(usage0 / CROWD),
  seen_keys: limiter.trackedKeys,
  rss_bytes_per_key_seen: Math.round((process.memoryUsage().rss - rss0) / CROWD),
  heap_bytes_per_key_seen: Math.round((process.memoryUsage().heapUsed - heap0) / CROWD),
  usage_table_bytes_per_key_seen: Math.round((limiter.table.buffer.byteLength - usage0) / CROWD),
};
console.log(JSON.stringify(memory));
writeResult('access-check', { date: new Date().toISOString(), rows, memory }, false);
