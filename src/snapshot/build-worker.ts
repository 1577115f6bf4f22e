/**
 * Worker entry: loads one snapshot file and sends the built columns back by
 * transfer, so the event loop of the server never decodes or builds.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { CodedError, messageOf } from '../core/errors.js';
import { transferables } from '../store/columns.js';
import { loadSnapshotFile } from './decode.js';

const path = (workerData as { path: string }).path;
try {
  const { columns, meta } = loadSnapshotFile(path);
  parentPort!.postMessage({ ok: true, columns, meta }, transferables(columns));
} catch (err) {
  const code = err instanceof CodedError ? err.code : 'E_SNAPSHOT_INVALID';
  parentPort!.postMessage({ ok: false, code, message: messageOf(err) });
}
