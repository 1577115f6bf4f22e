import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CodedError, fileProblem, messageOf } from '../core/errors.js';
import { mappedBuffer } from '../store/arena.js';
import { buildStore } from '../store/build.js';
import { ASN_FROM_DATABASE } from '../store/columns.js';
import type { ExitNetworks } from './asn-database.js';
import { RecordExtractor } from './record-extractor.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import { describeTopLevelError, serviceNamesProblem, validateTopLevel, type SnapshotFile } from './format.js';
import { DEFAULT_SERVICES } from '../core/vocabulary.js';
import { Truncated, arrayHeader, decodeOne, mapHeader, skipValue } from './msgpack-walk.js';
import { RecordDecoder } from './record-decoder.js';

const rejected = (reason: string): CodedError => new CodedError('E_SNAPSHOT_INVALID', `snapshot rejected: ${reason}`);

/** Reads the record at pos of `b`, returns the position after it. */
type RecordSink = (b: Buffer, pos: number, index: number) => number;

const WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * A window onto the snapshot's bytes. A file is read a few MB at a time, so a
 * reload never holds the whole file: records that end past the window are
 * read again after it moves on. Positions are relative to the window start.
 */
class Window {
  buf = Buffer.from(mappedBuffer(WINDOW_BYTES), 0, WINDOW_BYTES);
  len = 0;
  private fd: number | null;
  /** The file's size when it was opened. */
  readonly size: number;
  /** Every byte read, in order: the content hash of what was decoded. */
  private readonly hash = createHash('sha256');

  private constructor(fd: number) {
    this.fd = fd;
    this.size = fstatSync(fd).size;
  }

  static ofFile(path: string): Window {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err) {
      throw new CodedError('E_SNAPSHOT_READ', `cannot read snapshot ${path}: ${fileProblem(err)}`);
    }
    try {
      if (fstatSync(fd).isDirectory()) throw Object.assign(new Error('a folder'), { code: 'EISDIR' });
      const w = new Window(fd);
      w.fill();
      return w;
    } catch (err) {
      closeSync(fd);
      throw new CodedError('E_SNAPSHOT_READ', `cannot read snapshot ${path}: ${fileProblem(err)}`);
    }
  }

  get view(): Buffer {
    return this.buf.subarray(0, this.len);
  }

  get atEnd(): boolean {
    return this.fd === null;
  }

  private fill(): void {
    while (this.fd !== null && this.len < this.buf.length) {
      const n = readSync(this.fd, this.buf, this.len, this.buf.length - this.len, null);
      if (n === 0) this.close();
      this.hash.update(this.buf.subarray(this.len, this.len + n));
      this.len += n;
    }
  }

  /**
   * Drops the bytes before `from`, grows the window if what is left fills it,
   * and reads on. Returns how far positions moved (subtract it), or -1 at the
   * end of the file, when there is nothing more to read.
   */
  advance(from: number): number {
    if (this.fd === null) return -1;
    this.buf.copy(this.buf, 0, from, this.len);
    this.len -= from;
    if (this.len === this.buf.length) {
      const bigger = Buffer.from(mappedBuffer(this.buf.length * 2), 0, this.buf.length * 2);
      this.buf.copy(bigger, 0, 0, this.len);
      this.buf = bigger;
    }
    this.fill();
    return from;
  }

  /** The hash of the bytes read so far: all of them, once the walk is done. */
  digest(): string {
    return this.hash.digest('base64url');
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

type Begin = (top: SnapshotFile, records: number) => RecordSink;

/**
 * Reads a snapshot: the top level is decoded and validated first (a file that
 * fails there is rejected whole), then `begin` is told the top level and the
 * record count, and the sink it returns reads each record from its position.
 * Returns the top level, with `proxies` left empty, and the hash of the bytes.
 */
function readSnapshot(w: Window, begin: Begin): { top: SnapshotFile; contentHash: string } {
  try {
    const top = guarded(() => walk(w, begin));
    return { top, contentHash: w.digest() };
  } finally {
    w.close();
  }
}

function guarded(read: () => SnapshotFile): SnapshotFile {
  try {
    return read();
  } catch (err) {
    if (err instanceof CodedError) throw err;
    if (err instanceof Truncated) {
      throw new CodedError('E_SNAPSHOT_DECODE', 'snapshot ends in the middle of a value: truncated (partly written?), or not a snapshot at all');
    }
    // msgpackr decodes the few top-level values recursively.
    if (err instanceof RangeError && /call stack/.test(err.message)) {
      throw new CodedError('E_SNAPSHOT_DECODE', 'snapshot nests values too deeply to decode');
    }
    throw new CodedError('E_SNAPSHOT_DECODE', `snapshot does not decode as MessagePack: ${messageOf(err)}`);
  }
}

interface TopLevel {
  top: Record<string, unknown>;
  proxies: { at: number; count: number } | null;
  /** The records are the last entry: read them as a stream. */
  proxiesLast: boolean;
  end: number;
}

/** The top-level entries whose values are decoded (a `proxies` that is no array, to be refused); any other value is stepped over. */
const TOP_LEVEL_KEYS = new Set(['format', 'version', 'generated_at', 'services', 'proxies']);

/** True when the value at pos is a MessagePack string (fixstr, str8, str16, str32). */
function isString(b: Uint8Array, pos: number): boolean {
  if (pos >= b.length) throw new Truncated();
  const t = b[pos];
  return (t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb);
}

/** The top-level map; the records are stepped over, undecoded, unless they come last. */
function readTopLevel(bytes: Buffer): TopLevel {
  if (bytes.length === 0) throw rejected('the file is empty');
  const map = mapHeader(bytes, 0);
  if (!map) {
    skipValue(bytes, 0); // a well-formed value of the wrong kind, or undecodable bytes?
    throw rejected('top level must be a map');
  }
  const top: Record<string, unknown> = {};
  let proxies: TopLevel['proxies'] = null;
  let proxiesLast = false;
  let pos = map[1];
  for (let i = 0; i < map[0]; i++) {
    let key: unknown = undefined;
    if (isString(bytes, pos)) ({ value: key, end: pos } = decodeOne(bytes, pos));
    else pos = skipValue(bytes, pos);
    const list = key === 'proxies' ? arrayHeader(bytes, pos) : null;
    if (list) {
      proxies = { at: pos + list[1], count: list[0] };
      top.proxies = [];
      // Records wait until the services they may name are known.
      proxiesLast = i === map[0] - 1;
      pos = proxiesLast ? proxies.at : skipValue(bytes, pos);
    } else if (typeof key === 'string' && TOP_LEVEL_KEYS.has(key)) {
      const value = decodeOne(bytes, pos);
      top[key] = value.value;
      pos = value.end;
    } else {
      pos = skipValue(bytes, pos); // unknown keys are ignored (docs/snapshot.md), however large or deep
    }
  }
  return { top, proxies, proxiesLast, end: pos };
}

function walk(w: Window, begin: Begin): SnapshotFile {
  let t: TopLevel;
  for (;;) {
    try {
      t = readTopLevel(w.view);
      // Records that do not come last are found by stepping over them: that needs the whole file.
      if (t.proxiesLast || w.atEnd) break;
      if (w.advance(0) < 0) break;
    } catch (err) {
      if (!(err instanceof Truncated) || w.advance(0) < 0) throw err;
    }
  }
  const { top, proxies } = t;
  if (!t.proxiesLast && t.end !== w.len) throw rejected(`${w.len - t.end} bytes follow the snapshot`);
  if (!validateTopLevel(top)) throw rejected(describeTopLevelError());
  const problem = serviceNamesProblem(top.services ?? DEFAULT_SERVICES);
  if (problem) throw rejected(problem);
  // Each record takes at least one byte: a count beyond that would size the
  // columns for records that cannot be there (the window still starts at 0).
  if (proxies && proxies.count > w.size - proxies.at) throw new Truncated();
  const sink = begin(top, proxies?.count ?? 0);
  if (proxies) {
    let p = proxies.at;
    let view = w.view;
    for (let i = 0; i < proxies.count; i++) {
      try {
        p = sink(view, p, i);
      } catch (err) {
        // A record cut by the end of the window: move on and read it again.
        const moved = err instanceof Truncated ? w.advance(p) : -1;
        if (moved < 0) throw err;
        p -= moved;
        view = w.view;
        i--;
      }
    }
    if (t.proxiesLast) {
      // Nothing may follow the last record: look past the window's end.
      if (p === w.len) {
        const moved = w.advance(p);
        if (moved > 0) p -= moved;
      }
      if (w.len !== p || !w.atEnd) throw rejected('bytes follow the snapshot');
    }
  }
  return top;
}

function extractInto(asnDb: ExitNetworks | null): { begin: Begin; extractor: () => RecordExtractor } {
  let extractor: RecordExtractor | null = null;
  const begin: Begin = (header, records) => {
    const services = header.services ?? DEFAULT_SERVICES;
    const x = (extractor = new RecordExtractor(services, records, asnDb));
    const decoder = new RecordDecoder(services);
    return (b, pos, index) => {
      const end = decoder.read(b, pos);
      x.take(decoder, b, index);
      return end;
    };
  };
  return { begin, extractor: () => extractor! };
}

/** The default of --max-skipped-share: a snapshot with more of its records skipped is rejected whole. */
export const DEFAULT_MAX_SKIPPED_SHARE = 0.5;

/** Skipped records by reason, most first: `type is not one of ... (1000)`. */
export function describeSkips(counts: Record<string, number>): string {
  return Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${reason} (${n})`).join('; ');
}

/**
 * Read (a window at a time), decode, validate and build, on the calling
 * thread. `release` is called where the build's working space is let go of
 * (see buildStore). A snapshot in which more than `maxSkippedShare` of the
 * records break the rules is rejected whole: a checker that writes a field
 * wrongly must not empty the lists (docs/snapshot.md). With `asnDb`, a
 * record's exit network the checker does not give is looked up there.
 */
export function loadSnapshotFile(path: string, release?: () => void, maxSkippedShare = DEFAULT_MAX_SKIPPED_SHARE, asnDb: ExitNetworks | null = null): { columns: StoreColumns; meta: StoreMeta } {
  const { begin, extractor } = extractInto(asnDb);
  const { top, contentHash } = readSnapshot(Window.ofFile(path), begin);
  const records = extractor();
  const total = records.count + records.skipped;
  if (records.skipped > maxSkippedShare * total) {
    throw rejected(`${records.skipped} of its ${total} records break the rules, more than ${maxSkippedShare} of them (--max-skipped-share): ${describeSkips(records.skipCounts)}`);
  }
  const built = buildStore(records, top.generated_at, contentHash, release);
  let filled = 0;
  for (let r = 0; r < built.columns.rows; r++) filled += (built.columns.netFlags[r] & ASN_FROM_DATABASE) >>> 4;
  built.meta.asnDatabase = asnDb && { name: asnDb.name, date: asnDb.date, filled };
  return built;
}
