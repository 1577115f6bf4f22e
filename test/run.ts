/**
 * `npm test` after the build: runs every uvu suite (or those whose file a
 * pattern after the command matches: `node dist/test/run.js 'access/'`,
 * or `--engine-bound`: those that can fail differently on another engine,
 * build of uWebSockets.js or Node.js line, docs/testing.md)
 * with a temporary folder of its own (TMPDIR), then fails if a test left a folder of the project's or a
 * process behind in it, and removes that folder whatever happened. A run
 * judges only what it made itself, so two runs on one machine, or a run
 * killed before it could clean up, do not fail each other.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = mkdtempSync(join(tmpdir(), 'proxylist-tests-'));
// As open as the system's temporary folder: a test runs the server as another user, who must reach its files.
chmodSync(root, 0o1777);
// The suites run in a child (test/suites.ts) that ends even when a failed test leaves something running.
const suites = fileURLToPath(new URL('./suites.js', import.meta.url));
/**
 * The suites that talk to an HTTP engine about what engines do: the
 * requests, answers and bodies on the wire, hostile clients, threads, TLS
 * at the service and through the balancer. The rest (the store, queries,
 * snapshots, limits, Redis, the command line, pages) runs the same code
 * whatever the engine, and runs once in CI.
 */
const ENGINE_BOUND = '^(?:http|hostile|threads)/|^cli/tls-start|^cluster/(?:balancer-edge|https-balancer)';
const wanted = process.argv[2] === '--engine-bound' ? ENGINE_BOUND : process.argv[2];
// Only the suites themselves, never their source maps, whatever the pattern.
const pattern = `${wanted ? `(?=.*(?:${wanted}))` : ''}.*\\.test\\.js$`;
const child = spawn(process.execPath, [suites, pattern], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: root },
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
// A test that waits for ever must not hold CI until its own limit: the whole run gets this long.
const RUN_LIMIT_MS = 25 * 60_000;
const limit = setTimeout(() => {
  console.error(`the suites did not finish within ${RUN_LIMIT_MS / 60_000} minutes: stopped`);
  child.kill('SIGKILL');
}, RUN_LIMIT_MS);

const code = await new Promise<number>((resolve) => {
  child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
});
clearTimeout(limit);

/** Whatever the tests started works in a folder under root, which appears in its command line or is its working folder. */
function processesUnder(folder: string): string[] {
  if (!existsSync('/proc')) return [];
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .map((pid) => {
      try {
        // Or works in it: Redis rewrites its command line to its address.
        const cwd = readlinkSync(`/proc/${pid}/cwd`);
        return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()} (in ${cwd})`;
      } catch {
        return '';
      }
    })
    .filter((line) => line.includes(folder));
}

// Other programs (the browser) may leave files of their own in TMPDIR; those
// go with root, but only the project's folders count as left behind.
const folders = readdirSync(root).filter((n) => n.startsWith('proxylist-'));
const processes = processesUnder(root);
rmSync(root, { recursive: true, force: true });
if (folders.length > 0 || processes.length > 0) {
  console.error(`left behind by the tests: ${[...folders.map((f) => `folder ${f}`), ...processes.map((p) => `process ${p}`)].join('; ')}`);
  process.exit(1);
}
if (code === 0) console.log('nothing left behind: no temporary folder, no process');
process.exit(code);
