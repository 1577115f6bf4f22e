/**
 * Run after the suites (`npm test`): fails if a test left a temporary folder
 * or a process behind. Everything the tests start works in a folder named
 * proxylist-test-*, which appears in the command line of each process.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const PREFIX = 'proxylist-test-';
const folders = readdirSync(tmpdir()).filter((n) => n.startsWith(PREFIX));
const processes = existsSync('/proc')
  ? readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .map((pid) => {
      try {
        return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`;
      } catch {
        return '';
      }
    })
    .filter((line) => line.includes(PREFIX))
  : [];
if (folders.length > 0 || processes.length > 0) {
  console.error(`left behind by the tests: ${[...folders.map((f) => `folder ${f}`), ...processes.map((p) => `process ${p}`)].join('; ')}`);
  process.exit(1);
}
console.log('nothing left behind: no temporary folder, no process');
