/**
 * The cost of the access check (key lookup by SHA-256, client subnet, the
 * three limits, the RateLimit fields) per request, and the memory per key
 * with 100,000 active keys. Run: npm run bench -- access
 */
import { parseAddress, subnetOf } from '../src/access/address.js';
import { KeyTable } from '../src/access/keys.js';
import { MemoryLimiter } from '../src/access/limiter.js';
import { rateLimitHeaders } from '../src/access/rate-limit-headers.js';
import { round2, writeResult } from './harness.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const N = 200_000;
const nowMs = Date.parse('2026-11-22T12:00:00Z');

function check(table: KeyTable, limiter: MemoryLimiter, key: string, peer: string, i: number): boolean {
  const entry = table.find(key, nowMs);
  if (!entry) return false;
  const subnet = subnetOf(parseAddress(peer)!);
  const verdict = limiter.admit(entry, subnet, nowMs, i * 0.01);
  rateLimitHeaders(entry, limiter.allowance(entry, nowMs, i * 0.01));
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

// Memory per active key: 100,000 keys, each used once today from one subnet.
const keys = Array.from({ length: 100_000 }, (_, i) => ({ key: `key-${i}` }));
const table = KeyTable.parse(JSON.stringify({ keys }));
gc();
const before = process.memoryUsage().heapUsed;
const limiter = new MemoryLimiter();
for (let i = 0; i < keys.length; i++) limiter.admit(table.find(`key-${i}`, nowMs)!, subnetOf(parseAddress(`10.${i & 255}.0.1`)!), nowMs, i);
gc();
const perKey = (process.memoryUsage().heapUsed - before) / keys.length;
const memory = { active_keys: limiter.trackedKeys, limiter_bytes_per_key: Math.round(perKey) };
console.log(JSON.stringify(memory));
writeResult('access-check', { date: new Date().toISOString(), rows, memory }, false);
