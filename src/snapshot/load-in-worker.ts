import { Worker } from 'node:worker_threads';
import { CodedError, type ErrorCode } from '../core/errors.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';

type WorkerReply = { ok: true; columns: StoreColumns; meta: StoreMeta } | { ok: false; code: ErrorCode; message: string };

/**
 * Loads a snapshot in a fresh worker thread. A worker per load keeps the
 * decoded objects (hundreds of MB for a large file) out of the server's heap,
 * and they are gone when the worker exits.
 */
export function loadInWorker(path: string): Promise<{ columns: StoreColumns; meta: StoreMeta }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./build-worker.js', import.meta.url), { workerData: { path } });
    let settled = false;
    worker.once('message', (reply: WorkerReply) => {
      settled = true;
      if (reply.ok) resolve({ columns: reply.columns, meta: reply.meta });
      else reject(new CodedError(reply.code, reply.message));
    });
    worker.once('error', (err) => {
      settled = true;
      reject(new CodedError('E_BUILD_FAILED', `building the store failed (a bug, not the file): ${err.message}`));
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new CodedError('E_BUILD_FAILED', `the build worker exited with code ${code} (out of memory?), not the file's fault`));
    });
  });
}
