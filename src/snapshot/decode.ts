import { readFileSync } from 'node:fs';
import { CodedError, messageOf } from '../core/errors.js';
import { RecordExtractor, buildStore } from '../store/build.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import { DEFAULT_SERVICES, describeTopLevelError, serviceNamesProblem, validateTopLevel, type SnapshotFile } from './format.js';
import { Truncated, arrayHeader, decodeOne, mapHeader, skipValue } from './msgpack-walk.js';
import { RecordDecoder } from './record-decoder.js';

const rejected = (reason: string): CodedError => new CodedError('E_SNAPSHOT_INVALID', `snapshot rejected: ${reason}`);

/** Reads the record at pos, returns the position after it. */
type RecordSink = (pos: number, index: number) => number;

/**
 * Reads a snapshot: the top level is decoded and validated first (a file that
 * fails there is rejected whole), then `begin` is told the top level and the
 * record count, and the sink it returns reads each record from its position.
 * Returns the top level, with `proxies` left empty.
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
  let proxiesLast = false;
  for (let i = 0; i < map[0]; i++) {
    const key = decodeOne(bytes, pos);
    pos = key.end;
    const list = key.value === 'proxies' ? arrayHeader(bytes, pos) : null;
    if (list) {
      proxies = { at: pos + list[1], count: list[0] };
      top.proxies = [];
      // Records wait until the services they may name are known. When the
      // records come last (as checkers write them) nothing follows to look
      // for; otherwise the array is stepped over, undecoded, to find the rest.
      proxiesLast = i === map[0] - 1;
      if (!proxiesLast) pos = skipValue(bytes, pos);
    } else {
      const value = decodeOne(bytes, pos);
      if (typeof key.value === 'string') top[key.value] = value.value;
      pos = value.end;
    }
  }
  if (!proxiesLast && pos !== bytes.length) throw rejected(`${bytes.length - pos} bytes follow the snapshot`);
  if (!validateTopLevel(top)) throw rejected(describeTopLevelError());
  const problem = serviceNamesProblem(top.services ?? DEFAULT_SERVICES);
  if (problem) throw rejected(problem);
  const sink = begin(top, proxies?.count ?? 0);
  if (proxies) {
    let p = proxies.at;
    for (let i = 0; i < proxies.count; i++) p = sink(p, i);
    if (proxiesLast && p !== bytes.length) throw rejected(`${bytes.length - p} bytes follow the snapshot`);
  }
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
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let extractor: RecordExtractor | null = null;
  const top = readSnapshot(b, (header, records) => {
    const services = header.services ?? DEFAULT_SERVICES;
    const x = (extractor = new RecordExtractor(services, records));
    const decoder = new RecordDecoder(services);
    return (pos, index) => {
      const end = decoder.read(b, pos);
      x.take(decoder, b, index);
      return end;
    };
  });
  return buildStore(extractor!, top.generated_at);
}

export function loadSnapshotFile(path: string): { columns: StoreColumns; meta: StoreMeta } {
  return loadSnapshotBytes(readSnapshotFile(path));
}
