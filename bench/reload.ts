/**
 * Reloads of a 1,000,000-record snapshot through the real watch-and-load path
 * (T7, T8, T10): the time from the start of a load to the swap, the longest
 * event-loop stall meanwhile, and the process RSS steady and at the peak of a
 * reload (the build worker's memory included: it is this process's).
 * Run: npm run bench -- reload [--records N]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/log.js';
import { SnapshotFeed } from '../src/snapshot/snapshot-feed.js';
import { generateSnapshot, median, recordsOption, round2, sleep, writeResult } from './harness.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const records = recordsOption(1_000_000);
const RELOADS = 5;
const mb = (b: number) => Math.round(b / 1048576);

const dir = mkdtempSync(join(tmpdir(), 'proxylist-reload-'));
const path = join(dir, 'snapshot.msgpack');
const now = Math.floor(Date.now() / 1000);
// Every version is written before anything is timed: generating one takes seconds of this thread.
const versions = Array.from({ length: RELOADS + 1 }, (_, i) => join(dir, `v${i}.msgpack`));
versions.forEach((file, i) => generateSnapshot(file, records, now, i + 1));

const feed = new SnapshotFeed(path, systemClock, createLogger('silent'));
let swapped = 0;
feed.onSwap(() => swapped++);
/**
 * A checker's publish: rename a complete file over the path, from another
 * process as a checker would (the rename frees the replaced file's pages,
 * which takes the renaming thread tens of milliseconds). The publisher is
 * started once, before anything is timed: spawning a process from this one
 * would stall its event loop for the fork, which a server never does.
 */
const publisher = spawn('sh', ['-c', 'while read -r from to; do mv "$from" "$to"; done'], { stdio: ['pipe', 'ignore', 'inherit'] });
const publish = (v: number) => publisher.stdin!.write(`${versions[v]} ${path}\n`);

try {
  publish(0);
  await feed.start();
  while (swapped === 0) await sleep(5);
  await sleep(500);
  gc();
  await sleep(200);
  gc();
  const steady = process.memoryUsage().rss;

  // One histogram over all the reloads (re-enabling one counts the time it was off as a delay).
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const loads: number[] = [];
  const peaks: number[] = [];
  let peak = steady;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  for (let i = 1; i <= RELOADS; i++) {
    const before = swapped;
    peak = process.memoryUsage().rss;
    publish(i);
    while (swapped === before) await sleep(5);
    loads.push(feed.lastLoadMs);
    await sleep(1000); // the old store's memory is let go of meanwhile
    peaks.push(peak);
  }
  loop.disable();
  clearInterval(sampler);
  gc();
  await sleep(200);
  const after = process.memoryUsage().rss;
  const result = {
    date: new Date().toISOString(),
    records: feed.current!.rows,
    reloads: RELOADS,
    load_to_swap_ms_median: Math.round(median(loads)),
    load_to_swap_ms_each: loads.map(Math.round),
    longest_event_loop_stall_ms: Math.round(loop.max / 1e6),
    event_loop_delay_p99_ms: Math.round(loop.percentile(99) / 1e4) / 100,
    rss_steady_mb: mb(steady),
    rss_peak_during_reloads_mb: mb(Math.max(...peaks)),
    rss_peak_each_mb: peaks.map(mb),
    peak_over_steady: round2(Math.max(...peaks) / steady),
    rss_after_reloads_mb: mb(after),
  };
  writeResult(`reload-${records}`, result);
} finally {
  publisher.stdin!.end();
  await feed.close();
  rmSync(dir, { recursive: true, force: true });
}
