import type { Encoding } from './content-coding.js';

/**
 * A response body of `total` bytes, handed out as a sequence of pieces. One
 * reader takes it from start to end: `piece(i)` is asked for only after
 * piece i - 1 was taken whole, and may produce it then.
 */
export interface Body {
  readonly total: number;
  /** Piece i (from 0), or null after the last. */
  piece(i: number): Uint8Array | null;
  /**
   * The body is sent later than the call that began it: bytes it borrowed
   * from a buffer that the next request reuses must be taken over now.
   */
  keep?(): void;
  /**
   * The client stopped reading: the piece last handed out is given back, and
   * handed out again by the next call for the piece after the one before it.
   * False when there was nothing to give back.
   */
  park?(): boolean;
  /** Runs once: nothing of the body is read any more (sent, given up or aborted). */
  release(): void;
}

/** A body already in memory: its bytes, then an optional tail. */
export class BytesBody implements Body {
  readonly total: number;

  constructor(private readonly bytes: Uint8Array, private readonly tail: Uint8Array | null = null, private onRelease: (() => void) | null = null) {
    this.total = bytes.length + (tail?.length ?? 0);
  }

  piece(i: number): Uint8Array | null {
    return i === 0 ? this.bytes : i === 1 ? this.tail : null;
  }

  /** Bytes in memory belong to whoever made them (the cache, a compression), which may want to know when they are read no more. */
  release(): void {
    const done = this.onRelease;
    this.onRelease = null;
    done?.();
  }
}

/** Bytes the response cache keeps, until it lets go of them (`gone`). */
export interface Kept {
  readonly bytes: Uint8Array;
  readonly gone?: boolean;
}

/** A body that is, or will be, ready to read. */
export interface Source {
  /** The length of the body, once known; -1 before. */
  readonly total: number;
  /** The content coding of the bytes, null for none. */
  readonly encoding: Encoding | null;
  /**
   * Runs `ready` once the length is known (true), or the body cannot be had
   * (false). Returns what to call when the answer is no longer wanted (its
   * client went away): work that no one waits for any more stops.
   */
  whenReady(ready: (ok: boolean) => void): () => void;
  /** A reader of the body from its start; only once the length is known. */
  open(): Body;
  /** The response cache's entry whose bytes are the whole body, when they are: immutable, and kept while the cache keeps it. */
  readonly kept?: Kept;
}
