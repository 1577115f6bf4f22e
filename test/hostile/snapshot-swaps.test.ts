import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { serveProcesses } from '../helpers/cli.js';
import { MB, rssBytes } from '../../support/process-stats.js';
import { eventually } from '../helpers/server.js';

/**
 * Nothing that outlives a snapshot keeps it alive (docs/operations.md, Memory, hostile clients and secrets): clients
 * that add a cache-buster make a new remembered plan per request, and each
 * plan must not hold the store it was last answered from.
 */
test('24 snapshot swaps, one cache-busted query after each, leave the RSS of the server process within 60 MB', async () => {
  const RECORDS = 100_000;
  const s = await serveProcesses(1, RECORDS, 7);
  try {
    const base = `http://127.0.0.1:${s.ports[0]}`;
    const pid = s.children[0].proc.pid!;
    const generatedAt = async () => ((await (await fetch(`${base}/health`)).json()) as { snapshot: { generated_at: string } }).snapshot.generated_at;
    const now = Math.floor(Date.now() / 1000);
    const versions = [0, 1].map((v) => encodeSnapshot(generateRecords({ records: RECORDS, seed: 50 + v, now }), now + 1 + v));
    const swapAndAsk = async (i: number) => {
      const before = await generatedAt();
      writeFileAtomic(s.snapshot, versions[i % 2]);
      await eventually(async () => (await generatedAt()) !== before, 20_000, `swap ${i}`);
      const res = await fetch(`${base}/api?key=k&type=http&count=10&_=${1700000000 + i}`);
      assert.is(res.status, 200);
      await res.arrayBuffer();
    };
    // Warm up: the first swaps settle the heap and the worker.
    for (let i = 0; i < 4; i++) await swapAndAsk(i);
    const start = rssBytes(pid);
    for (let i = 4; i < 28; i++) await swapAndAsk(i);
    const grown = (rssBytes(pid) - start) / MB;
    assert.ok(grown < 60, `RSS grew by ${grown.toFixed(0)} MB over 24 swaps`);
  } finally {
    await s.close();
  }
});

test.run();
