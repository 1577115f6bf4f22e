/**
 * The child process of `npm test` (test/run.ts): runs the uvu suites under
 * dist/test that `pattern` matches, as uvu's command line does, says which
 * files took longest (docs/testing.md: what CI runs where), and then makes
 * sure the process ends. A test that fails halfway may leave a server, a
 * socket or a timer behind, which would keep this process, and CI, waiting
 * for ever: once the suites are done, whatever still runs gets a few
 * seconds, is named, and the run fails.
 */
import { writeFileSync } from 'node:fs';
import { parse } from 'uvu/parse';

const LINGER_MS = 15_000;
const SLOWEST = 12;
const pattern = process.argv[2];
const ctx = await parse('dist/test', pattern, { cwd: process.cwd() });

// As uvu's run(): each file's tests queue as a group named after it; they run in exec().
type Runner = () => Promise<unknown>;
const g = globalThis as unknown as { UVU_DEFER: number; UVU_INDEX: number; UVU_QUEUE: Array<Array<string | null | Runner>> };
g.UVU_DEFER = 1;
const uvu = await import('uvu');
for (const [index, s] of ctx.suites.entries()) {
  g.UVU_INDEX = index;
  g.UVU_QUEUE.push([s.name]);
  await import(`file:///${s.file}`);
}
// Each file's time, summed over its suites.
const spent = new Map<string, number>();
for (const group of g.UVU_QUEUE) {
  const name = String(group[0]);
  for (let i = 1; i < group.length; i++) {
    const runner = group[i] as Runner;
    group[i] = async () => {
      const started = performance.now();
      try {
        const [errors, ran, skipped, total] = (await runner()) as [string | true, number, number, number];
        // uvu counts a suite whose before hook failed as passed, with none of its tests run: here it fails.
        if (errors === true && ran + skipped < total) return [`   FAIL  ${name}: ${total - ran - skipped} of ${total} tests did not run (a before hook failed; run the file alone to see why)`, ran, skipped, total];
        return [errors, ran, skipped, total];
      } finally {
        spent.set(name, (spent.get(name) ?? 0) + performance.now() - started);
      }
    };
  }
}
await uvu.exec(false);
// Every file's seconds, for choosing what CI runs where (docs/testing.md).
if (process.env.PROXYLIST_TEST_TIMES) writeFileSync(process.env.PROXYLIST_TEST_TIMES, JSON.stringify(Object.fromEntries([...spent].map(([name, ms]) => [name, Math.round(ms) / 1000])), null, 1));
const slowest = [...spent].filter(([name]) => name !== 'null').sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
console.log(`slowest files: ${slowest.map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);

setTimeout(() => {
  const left = process.getActiveResourcesInfo().filter((r) => r !== 'Timeout');
  console.error(`the suites are done, but what they started still runs ${LINGER_MS / 1000} s later (${left.join(', ') || 'timers'}): a test did not close what it opened`);
  process.exit(1);
}, LINGER_MS).unref();
