import { readFileSync } from 'node:fs';
import { unpack } from 'msgpackr';
import { CodedError, messageOf } from '../core/errors.js';
import { buildStore } from '../store/build.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import { describeTopLevelError, serviceNamesProblem, validateTopLevel, type SnapshotFile } from './format.js';

/** Decodes and checks the top level; a file that fails here is rejected whole. */
export function decodeSnapshot(bytes: Uint8Array): SnapshotFile {
  let value: unknown;
  try {
    value = unpack(bytes);
  } catch (err) {
    const truncated = (err as { incomplete?: boolean }).incomplete === true;
    throw new CodedError('E_SNAPSHOT_DECODE', truncated ? 'snapshot is truncated (partly written?)' : `snapshot does not decode as MessagePack: ${messageOf(err)}`);
  }
  if (!validateTopLevel(value)) throw new CodedError('E_SNAPSHOT_INVALID', `snapshot rejected: ${describeTopLevelError()}`);
  const problem = value.services ? serviceNamesProblem(value.services) : null;
  if (problem) throw new CodedError('E_SNAPSHOT_INVALID', `snapshot rejected: ${problem}`);
  return value;
}

export function readSnapshotFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CodedError('E_SNAPSHOT_READ', `cannot read snapshot ${path}: ${messageOf(err)}`);
  }
}

/** Read, decode, validate and build, on the calling thread. */
export function loadSnapshotFile(path: string): { columns: StoreColumns; meta: StoreMeta } {
  return buildStore(decodeSnapshot(readSnapshotFile(path)));
}
