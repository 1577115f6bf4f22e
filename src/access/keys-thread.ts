import { Worker } from 'node:worker_threads';
import { CodedError } from '../core/errors.js';
import type { KeysData } from './keys.js';

/**
 * Reads and checks a keys file on a thread of its own, which ends with the
 * read: its memory (the parsed JSON of the whole file) goes with it. Rejects
 * with the one-line E_KEYS_INVALID of a file that is wrong.
 */
export function readKeysOffThread(path: string): Promise<KeysData> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./keys-worker.js', import.meta.url));
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      fn();
    };
    worker.once('message', (m: { ok: true; data: KeysData } | { ok: false; message: string }) => settle(() => (m.ok ? resolve(m.data) : reject(new CodedError('E_KEYS_INVALID', m.message)))));
    // The thread itself failed: out of memory on a file too large for this host.
    worker.once('error', (err) => settle(() => reject(new CodedError('E_KEYS_INVALID', `keys file could not be read: ${err.message}`))));
    worker.once('exit', (code) => settle(() => reject(new CodedError('E_KEYS_INVALID', `keys file could not be read: the reading thread stopped (${code})`))));
    worker.postMessage({ path });
  });
}
