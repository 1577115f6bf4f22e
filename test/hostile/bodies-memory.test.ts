import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serveProcesses } from '../helpers/cli.js';
import { leaveAfter, readThenHold } from '../../support/hostile-clients.js';
import { MB, cpuSeconds, rssBytes, watchPeakRss } from '../../support/process-stats.js';
import { eventually } from '../helpers/server.js';

/**
 * Memory stays within the options whatever the readers do (docs/operations.md, Memory, hostile clients and secrets):
 * distinct large bodies whose readers stop, and compressed bodies whose
 * clients leave at once. A server process with 100,000 records; smaller
 * budgets than the defaults (--cache-mb 32, --bodies-mb 64) keep the test
 * short, and the bound is the same formula (`npm run bench -- hostile` measures it with
 * the defaults and 200,000 records).
 */
const CACHE_MB = 32;
const BODIES_MB = 64;
const OPTIONS = ['--drain-s', '0', '--cache-mb', String(CACHE_MB), '--bodies-mb', String(BODIES_MB)];

/** Distinct JSON bodies of about 26 MB each: one per `works` threshold, nearly all rows of the store in the window. */
const big = (i: number): string => `/api?key=k&get=json&time=100000&pretty=0&works=${i}`;
/** The whole store in the window, a body of a query none of the others is: its length bounds theirs. */
const WARM = '/api?key=k&get=json&time=100000&pretty=0';

/** Serving threads: each keeps a spare buffer of its own (bodies/body-memory.ts). */
const threadsOf = async (base: string): Promise<number> => ((await (await fetch(`${base}/health`)).json()) as { threads: number }).threads;

const budgetBytes = async (base: string): Promise<number> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^proxylist_body_budget_bytes (\d+)/m.exec(text)![1]);
};

test('40 distinct large bodies read halfway and then held: the RSS grows by less than the cache, the bodies budget and 100 MB, and the budget comes back when they leave', async () => {
  const s = await serveProcesses(1, 100_000, 31, OPTIONS);
  try {
    const port = s.ports[0];
    const base = `http://127.0.0.1:${port}`;
    const pid = s.children[0].proc.pid!;
    await (await fetch(base + WARM)).arrayBuffer();
    const start = rssBytes(pid);
    const peak = watchPeakRss(pid);
    const held = [];
    for (let wave = 0; wave < 4; wave++) held.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => readThenHold(port, big(wave * 10 + i), 0.5)))));
    assert.ok(held.every((h) => h.expected > 20 * MB), `bodies of ${held.map((h) => h.expected).join(', ')} bytes`);
    // Held long enough for every reader to be parked.
    await new Promise((r) => setTimeout(r, 6000));
    const grown = (peak.stop() - start) / MB;
    for (const h of held) h.close();
    assert.ok(grown < CACHE_MB + BODIES_MB + 100, `RSS grew by ${grown.toFixed(0)} MB`);
    const largest = Math.max(...held.map((h) => h.expected));
    const spares = await threadsOf(base);
    await eventually(async () => (await budgetBytes(base)) <= largest * 1.05 * spares, 10_000, 'the budget given back, but for a spare buffer a thread');
  } finally {
    await s.close();
  }
});

test('40 distinct brotli bodies whose clients leave after 50 ms: the compressions stop with them', async () => {
  const s = await serveProcesses(1, 100_000, 32, OPTIONS);
  try {
    const port = s.ports[0];
    const base = `http://127.0.0.1:${port}`;
    const pid = s.children[0].proc.pid!;
    const largest = (await (await fetch(base + WARM)).arrayBuffer()).byteLength;
    const cpuBefore = cpuSeconds(pid);
    const start = rssBytes(pid);
    const peak = watchPeakRss(pid);
    for (let wave = 0; wave < 2; wave++) await Promise.all(Array.from({ length: 20 }, (_, i) => leaveAfter(port, big(wave * 20 + i), 50, { 'Accept-Encoding': 'br' })));
    // What still runs after the clients left shows as CPU time here: compressing each body whole takes a CPU-second or so.
    await new Promise((r) => setTimeout(r, 5000));
    const cpu = cpuSeconds(pid) - cpuBefore;
    const grown = (peak.stop() - start) / MB;
    assert.ok(cpu < 3, `${cpu.toFixed(1)} CPU-s for 40 compressions given up`);
    assert.ok(grown < CACHE_MB + BODIES_MB + 100, `RSS grew by ${grown.toFixed(0)} MB`);
    // All given back but a spare buffer a thread, kept a minute for the next body of its size.
    const left = await budgetBytes(base);
    assert.ok(left <= largest * 1.05 * (await threadsOf(base)), `${left} bytes still taken`);
  } finally {
    await s.close();
  }
});

test.run();
