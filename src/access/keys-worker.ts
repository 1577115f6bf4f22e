/**
 * The thread that reads a keys file (keys-thread.ts): reading a file of a
 * million keys takes seconds, which the event loop must not wait for. What
 * it makes is a few typed arrays in shared memory, handed over without a copy.
 * It reads in slices with a pause between them (keys-file.ts), so a serving
 * thread on the same core mostly waits behind one slice, not the kernel's.
 */
import { parentPort } from 'node:worker_threads';
import { CodedError, messageOf } from '../core/errors.js';
import { onlyWhenIdle, yieldToEventLoop } from '../core/thread-priority.js';
import { BRIEF_PAUSES, LONG_PAUSES, NO_SLICES, TimedSlices } from '../core/slices.js';
import { readKeysFile } from './keys-file.js';
import type { KeysRead } from './keys-thread.js';

// Reading a million keys takes seconds of a core that the serving threads may share.
yieldToEventLoop();
parentPort!.once('message', ({ path, pace }: KeysRead) => {
  // A serving thread that wakes takes an idle-policy thread's core at once: no pauses needed. A reload without it takes a tenth of a core.
  const idle = pace === 'idle' && onlyWhenIdle();
  parentPort!.postMessage({ idle });
  const slices = idle ? NO_SLICES : new TimedSlices(pace === 'first' ? BRIEF_PAUSES : LONG_PAUSES);
  try {
    const data = readKeysFile(path, slices);
    parentPort!.postMessage({ ok: true, data, idle });
  } catch (err) {
    parentPort!.postMessage({ ok: false, message: err instanceof CodedError ? messageOf(err) : `keys file cannot be read: ${messageOf(err)}` });
  }
});
