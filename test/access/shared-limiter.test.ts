import { Worker } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MemoryLimiter } from '../../src/access/limiter.js';
import { sha256Hex, type KeyEntry, type Limits, digestWords } from '../../src/access/keys.js';
import { prng } from '../../src/snapshot/generate.js';
import { NaiveLimiter } from '../reference/naive-limiter.js';

/**
 * The limiter shared by the threads (access/limiter.ts over
 * access/shared-usage.ts) against the plain one of test/reference: the same
 * verdicts, allowances, usage and saved days on random sequences; and exact
 * limits when threads admit at once.
 */
/** An entry; `hinted`: with words of its own for the limiter's hint of where its usage is, as a key table's entries have (known-keys.ts). */
const entry = (name: string, limits: Limits, hinted = false): KeyEntry => ({
  ...{ id: sha256Hex(name), label: name, name, disabled: false, expiresAtMs: null, limits, digest: digestWords(sha256Hex(name)), digestAt: 0 },
  ...(hinted ? { hints: new Int32Array(6), hintAt: 4 } : {}),
});
const DAY_MS = 86_400_000;
const START_MS = Date.parse('2026-11-28T12:00:00Z');

function randomLimits(r: () => number): Limits {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  return { perWindow: pick([null, 1, 2, 3, 7]), windowS: pick([1, 5, 60]), daily: pick([null, 1, 4, 30]), subnets: pick([null, 1, 2, 5]) };
}

for (const [seed, keyCount] of [[1, 5], [2, 40], [3, 3000]] as const) {
  test(`seed ${seed}, ${keyCount} keys: the same verdicts, allowances, usage and saved day as the reference, limits changed on the way`, () => {
    const r = prng(seed);
    const shared = new MemoryLimiter();
    const naive = new NaiveLimiter();
    const names = Array.from({ length: keyCount }, (_, i) => `key-${seed}-${i}`);
    // Half the keys with a usage hint, kept from step to step while records move, the table grows and is pruned.
    const keys = new Map(names.map((n, i) => [n, entry(n, randomLimits(r), i % 2 === 0)]));
    const twins: Record<string, Int32Array> = {};
    let nowMs = START_MS;
    let monoMs = 1_000_000;
    const steps = Math.max(4000, keyCount * 4);
    for (let step = 0; step < steps; step++) {
      const dt = r() < 0.02 ? DAY_MS / 3 : r() * 1500;
      nowMs += dt;
      monoMs += dt;
      const name = names[Math.floor(r() * names.length)];
      const what = r();
      if (what < 0.03) keys.set(name, { ...keys.get(name)!, limits: randomLimits(r) });
      // A hinted key is asked for through either of two entries with hints of their own, as two threads' key tables ask for it.
      const own = keys.get(name)!;
      const key = own.hints && r() < 0.5 ? { ...own, hints: (twins[name] ??= new Int32Array(6)) } : own;
      if (what < 0.8) {
        const subnet = Math.floor(r() * 7);
        // The verdict, and what it says the key has left: what the reference says after it.
        const { allowance, ...verdict } = shared.admit(key, subnet, nowMs, monoMs);
        assert.equal(verdict, naive.admit(key, subnet, nowMs, monoMs), `step ${step}: admit ${name} ${JSON.stringify(key.limits)}`);
        const limited = key.limits.perWindow !== null || key.limits.daily !== null;
        assert.equal(allowance, limited ? naive.allowance(key, nowMs, monoMs) : undefined, `step ${step}: the allowance of ${name}'s verdict`);
      } else if (what < 0.9) {
        assert.equal(shared.allowance(key, nowMs, monoMs), naive.allowance(key, nowMs, monoMs), `step ${step}: allowance of ${name}`);
      } else if (what < 0.995) {
        const some = [...keys.values()].slice(0, 50);
        assert.equal(sorted(shared.usage(some, nowMs)), sorted(naive.usage(some, nowMs)));
      } else {
        const longest = 60_000;
        shared.prune(nowMs, monoMs, longest);
        naive.prune(nowMs, monoMs, longest);
        assert.is(shared.trackedKeys, naive.trackedKeys, `step ${step}: keys kept after pruning`);
      }
    }
    assert.equal(shared.exportDay(nowMs), naive.exportDay(nowMs));
    // A saved day taken into a new table gives the same day back.
    const again = new MemoryLimiter();
    assert.ok(again.importDay(shared.exportDay(nowMs), nowMs));
    assert.equal(again.exportDay(nowMs), shared.exportDay(nowMs));
  });
}

async function sorted(p: Promise<Map<string, unknown>>): Promise<Array<[string, unknown]>> {
  return [...(await p)].sort(([a], [b]) => a.localeCompare(b));
}

/** `threads` threads admit `key` `count` times each, all at once, on one table; what each let through. */
async function race(key: KeyEntry, threads: number, count: number, subnetsOf: (t: number) => number[]): Promise<{ accepted: number; subnets: Set<number>; limiter: MemoryLimiter }> {
  const limiter = new MemoryLimiter();
  const go = new SharedArrayBuffer(4);
  const workers = Array.from({ length: threads }, (_, t) =>
    new Worker(new URL('./shared-limiter-worker.js', import.meta.url), { workerData: { shared: limiter.table.buffer, go, key, count, subnets: subnetsOf(t), nowMs: START_MS, monoMs: 5_000_000 } }),
  );
  const replies = workers.map((w) => new Promise<{ accepted: number; acceptedSubnets: number[] }>((resolve, reject) => w.once('message', resolve).once('error', reject)));
  // Every thread waits on the word; all are let go together.
  await new Promise((r) => setTimeout(r, 100));
  Atomics.store(new Int32Array(go), 0, 1);
  Atomics.notify(new Int32Array(go), 0);
  const got = await Promise.all(replies);
  await Promise.all(workers.map((w) => w.terminate()));
  return { accepted: got.reduce((n, g) => n + g.accepted, 0), subnets: new Set(got.flatMap((g) => g.acceptedSubnets)), limiter };
}

test('4 threads at once: exactly the daily limit let through, and counted once', async () => {
  const key = entry('daily', { perWindow: null, windowS: null, daily: 5000, subnets: null });
  const { accepted, limiter } = await race(key, 4, 4000, () => [1]);
  assert.is(accepted, 5000);
  assert.is((await limiter.usage([key], START_MS)).get(key.id)!.today, 5000);
});

test('4 threads at once: exactly per_window let through within the window', async () => {
  const key = entry('window', { perWindow: 300, windowS: 60, daily: null, subnets: null });
  const { accepted } = await race(key, 4, 1000, () => [1]);
  assert.is(accepted, 300);
});

test('4 threads at once, each from subnets of its own: exactly the subnet limit of distinct subnets let in', async () => {
  const key = entry('subnets', { perWindow: null, windowS: null, daily: null, subnets: 10 });
  const { subnets, limiter } = await race(key, 4, 2000, (t) => Array.from({ length: 8 }, (_, i) => t * 100 + i));
  assert.is(subnets.size, 10);
  assert.is((await limiter.usage([key], START_MS)).get(key.id)!.subnets, 10);
});

test('the table grows and is rebuilt in place as keys come, every count kept', () => {
  const limiter = new MemoryLimiter();
  const before = limiter.table.buffer.byteLength;
  const keys = Array.from({ length: 20_000 }, (_, i) => entry(`grow-${i}`, { perWindow: 2, windowS: 5, daily: 3, subnets: 2 }, i % 3 === 0));
  for (const k of keys) assert.ok(limiter.admit(k, 1, START_MS, 1000).ok);
  for (const k of keys) assert.ok(limiter.admit(k, 2, START_MS, 1001).ok);
  assert.ok(limiter.table.buffer.byteLength > before, 'grown');
  assert.is(limiter.trackedKeys, 20_000);
  const day = limiter.exportDay(START_MS);
  assert.is(Object.keys(day.keys).length, 20_000);
  for (const k of keys) assert.equal(day.keys[k.id], { count: 2, subnets: [1, 2] });
});

test.run();
