import type { Kept } from '../bodies/body.js';
import type { MemoEntry, QueryMemo } from '../query/query-memo.js';
import type { Head } from './head.js';

/**
 * What the first answer to a query made, for the next identical request
 * (docs/design.md, A repeated answer): its heads and the bytes of its body,
 * as the response cache keeps them, and what could change the answer. It
 * holds for the snapshot of `generation`, in the second `second` (rows
 * leave the window on whole seconds), for the same Accept-Encoding; a
 * matching If-None-Match gets `notModified`. It is the query's, whichever
 * key asks: each request's RateLimit fields follow the head (Exchange.rate).
 */
export interface Repeat {
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

export type AnswerMemo = QueryMemo<Repeat>;
export type AnswerMemoEntry = MemoEntry<Repeat>;

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * The repeated answers of one serving thread, kept in the query memo's
 * entries (as many as it keeps). Forgotten on every swap: nothing outlives
 * its snapshot.
 */
export class Repeats {
  /** Requests answered from a repeat. */
  hits = 0;

  constructor(readonly memo: AnswerMemo) {}

  clear(): void {
    this.memo.forgetAnswers();
  }
}
