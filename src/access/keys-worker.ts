/**
 * The thread that reads a keys file (keys-thread.ts): JSON.parse of a file of
 * a million keys takes seconds, which the event loop must not wait for. What
 * it makes is a few typed arrays in shared memory, handed over without a copy.
 */
import { readFileSync, statSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { CodedError, messageOf } from '../core/errors.js';
import { yieldToEventLoop } from '../core/thread-priority.js';
import { KEYS_FILE_MAX_BYTES, parseKeys } from './keys.js';

// Reading a million keys takes seconds of a core that the serving threads may share.
yieldToEventLoop();
parentPort!.once('message', ({ path }: { path: string }) => {
  try {
    const size = statSync(path).size;
    if (size > KEYS_FILE_MAX_BYTES) throw new CodedError('E_KEYS_INVALID', `keys file rejected: ${size} bytes, more than the ${KEYS_FILE_MAX_BYTES / 1024 / 1024} MB a keys file may have`);
    const data = parseKeys(readFileSync(path, 'utf8'));
    parentPort!.postMessage({ ok: true, data });
  } catch (err) {
    parentPort!.postMessage({ ok: false, message: err instanceof CodedError ? messageOf(err) : `keys file cannot be read: ${messageOf(err)}` });
  }
});
