import { readFileSync } from 'node:fs';
import { CodedError, messageOf } from '../core/errors.js';
import { RecordExtractor, buildStore } from '../store/build.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import { DEFAULT_SERVICES, describeTopLevelError, serviceNamesProblem, validateTopLevel, type SnapshotFile } from './format.js';
import { Truncated, arrayHeader, decodeEach, decodeOne, mapHeader, skipValue } from './msgpack-walk.js';

const rejected = (reason: string): CodedError => new CodedError('E_SNAPSHOT_INVALID', `snapshot rejected: ${reason}`);

type RecordSink = (record: unknown, index: number) => void;

/**
 * Reads a snapshot: the top level is decoded and validated first (a file that
 * fails there is rejected whole), then `begin` is told the top level and the
 * record count, and each record, decoded on its own, goes to the sink it
 * returns. Returns the top level, with `proxies` left empty.
 */
export function readSnapshot(bytes: Uint8Array, begin: (top: SnapshotFile, records: number) => RecordSink): SnapshotFile {
  try {
    return walk(bytes, begin);
  } catch (err) {
    if (err instanceof CodedError) throw err;
    if (err instanceof Truncated || (err as { incomplete?: boolean }).incomplete === true) {
      throw new CodedError('E_SNAPSHOT_DECODE', 'snapshot is truncated (partly written?)');
    }
    throw new CodedError('E_SNAPSHOT_DECODE', `snapshot does not decode as MessagePack: ${messageOf(err)}`);
  }
}

function walk(bytes: Uint8Array, begin: (top: SnapshotFile, records: number) => RecordSink): SnapshotFile {
  if (bytes.length === 0) throw new Truncated();
  const map = mapHeader(bytes, 0);
  if (!map) {
    decodeOne(bytes, 0); // a well-formed value of the wrong kind, or undecodable bytes?
    throw rejected('top level must be a map');
  }
  const top: Record<string, unknown> = {};
  let proxies: { at: number; count: number } | null = null;
  let pos = map[1];
  for (let i = 0; i < map[0]; i++) {
    const key = decodeOne(bytes, pos);
    pos = key.end;
    const list = key.value === 'proxies' ? arrayHeader(bytes, pos) : null;
    if (list) {
      // Records wait until the services they may name are known.
      proxies = { at: pos + list[1], count: list[0] };
      top.proxies = [];
      pos = skipValue(bytes, pos);
    } else {
      const value = decodeOne(bytes, pos);
      if (typeof key.value === 'string') top[key.value] = value.value;
      pos = value.end;
    }
  }
  if (pos !== bytes.length) throw rejected(`${bytes.length - pos} bytes follow the snapshot`);
  if (!validateTopLevel(top)) throw rejected(describeTopLevelError());
  const problem = serviceNamesProblem(top.services ?? DEFAULT_SERVICES);
  if (problem) throw rejected(problem);
  const sink = begin(top, proxies?.count ?? 0);
  if (proxies) decodeEach(bytes, proxies.at, proxies.count, sink);
  return top;
}

export function readSnapshotFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CodedError('E_SNAPSHOT_READ', `cannot read snapshot ${path}: ${messageOf(err)}`);
  }
}

/** Read, decode, validate and build, on the calling thread. */
export function loadSnapshotBytes(bytes: Uint8Array): { columns: StoreColumns; meta: StoreMeta } {
  let extractor: RecordExtractor | null = null;
  const top = readSnapshot(bytes, (header, records) => {
    const x = (extractor = new RecordExtractor(header.services ?? DEFAULT_SERVICES, records));
    return (record, index) => x.add(record, index);
  });
  return buildStore(extractor!, top.generated_at);
}

export function loadSnapshotFile(path: string): { columns: StoreColumns; meta: StoreMeta } {
  return loadSnapshotBytes(readSnapshotFile(path));
}
