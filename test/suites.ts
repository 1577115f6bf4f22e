/**
 * The child process of `npm test` (test/run.ts): runs the uvu suites under
 * dist/test that `pattern` matches, as uvu's command line does, and then
 * makes sure the process ends. A test that fails halfway may leave a server,
 * a socket or a timer behind, which would keep this process, and CI, waiting
 * for ever: once the suites are done, whatever still runs gets a few seconds,
 * is named, and the run fails.
 */
import { parse } from 'uvu/parse';
import { run } from 'uvu/run';

const LINGER_MS = 15_000;
const pattern = process.argv[2];
const ctx = await parse('dist/test', pattern, { cwd: process.cwd() });
await run(ctx.suites, { bail: false });
setTimeout(() => {
  const left = process.getActiveResourcesInfo().filter((r) => r !== 'Timeout');
  console.error(`the suites are done, but what they started still runs ${LINGER_MS / 1000} s later (${left.join(', ') || 'timers'}): a test did not close what it opened`);
  process.exit(1);
}, LINGER_MS).unref();
