/**
 * `npm test` after the build: runs every uvu suite (or the files a pattern
 * after the command matches: `node dist/test/run.js 'access/.*\.test\.js$'`)
 * with a temporary folder of its own (TMPDIR), then fails if a test left a folder of the project's or a
 * process behind in it, and removes that folder whatever happened. A run
 * judges only what it made itself, so two runs on one machine, or a run
 * killed before it could clean up, do not fail each other.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = mkdtempSync(join(tmpdir(), 'proxylist-tests-'));
// As open as the system's temporary folder: a test runs the server as another user, who must reach its files.
chmodSync(root, 0o1777);
// uvu's command line: bin.js beside the package's dist folder (not among its exports).
const uvu = join(dirname(createRequire(import.meta.url).resolve('uvu')), '..', 'bin.js');
const pattern = process.argv[2] ?? '\\.test\\.js$';
const child = spawn(process.execPath, [uvu, 'dist/test', pattern], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: root },
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));

const code = await new Promise<number>((resolve) => {
  child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
});

/** Whatever the tests started works in a folder under root, which appears in its command line. */
function processesUnder(folder: string): string[] {
  if (!existsSync('/proc')) return [];
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .map((pid) => {
      try {
        return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`;
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
