import type { KeyEntry } from '../access/keys.js';
import type { Kept } from '../bodies/body.js';
import type { Head } from './head.js';

/**
 * The most queries whose last answer is remembered, per serving thread: a
 * few hundred bytes each beside bytes the response cache keeps anyway.
 */
const MAX_REPEATS = 4096;

/**
 * What the first answer to a query made, for the next identical request
 * (docs/design.md, A repeated answer): its heads and the bytes of its body,
 * as the response cache keeps them, and what could change the answer. It
 * holds for the snapshot of `generation`, in the second `second` (rows
 * leave the window on whole seconds), for the same key entry and the same
 * Accept-Encoding; a matching If-None-Match gets `notModified`.
 */
export interface Repeat {
  /** The key the query presents, and the entry found for it then (another table or entry is a miss). */
  readonly key: string;
  readonly entry: KeyEntry;
  readonly acceptEncoding: string;
  readonly generation: number;
  readonly second: number;
  readonly etag: string;
  readonly ok: Head;
  readonly notModified: Head;
  /** The body, while the cache keeps it: its bytes are then immutable, and counted in the cache's budget. */
  readonly body: Kept;
  /** Its bytes as a Buffer (a view, no copy): Node's http takes a Buffer as it is, and wraps any other Uint8Array at each write. */
  readonly bytes: Buffer;
}

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * The repeated answers of one serving thread, by query string, at most
 * MAX_REPEATS (the oldest remembered goes first). Emptied on every swap:
 * nothing in it outlives its snapshot.
 */
export class Repeats {
  private readonly byQuery = new Map<string, Repeat>();
  /** Requests answered from a repeat. */
  hits = 0;

  get(query: string): Repeat | undefined {
    return this.byQuery.get(query);
  }

  remember(query: string, r: Repeat): void {
    if (this.byQuery.size >= MAX_REPEATS && !this.byQuery.has(query)) this.byQuery.delete(this.byQuery.keys().next().value!);
    this.byQuery.set(query, r);
  }

  forget(query: string): void {
    this.byQuery.delete(query);
  }

  get size(): number {
    return this.byQuery.size;
  }

  clear(): void {
    this.byQuery.clear();
  }
}
