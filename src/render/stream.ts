import type { Plan } from '../query/plan.js';
import type { Store } from '../store/store.js';
import { jsonShape } from './body.js';
import { jsonLength, jsonRowBound, renderJsonPart, type JsonShape } from './json.js';
import type { OutputBuffer } from './output-buffer.js';

/**
 * About this many bytes are written per chunk. Smaller chunks measured
 * slower on the 100K mix (128 KB: 0.38x of the ceiling, 1 MB: 0.44x, 4 MB:
 * 0.49x): every send wakes the client for a smaller piece.
 */
export const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * A bare JSON body (without the envelope) written a chunk of rows at a time
 * into one buffer, each chunk sent before the next is written, instead of the
 * whole body at once. Its length is known before any byte is written, from
 * the lengths of the values.
 */
export class JsonStream {
  readonly total: number;
  /** Rows before this index of `rows` are written. */
  private at = 0;
  private readonly rowsPerChunk: number;

  private constructor(
    private readonly store: Store,
    private readonly plan: Plan,
    private readonly shape: JsonShape,
    rowBound: number,
    private rows: Uint32Array,
    private readonly n: number,
  ) {
    this.total = jsonLength(store, rows, n, shape, plan.lang);
    this.rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / rowBound));
  }

  /**
   * The stream of `rows[0..n)` when streaming pays, else null: a bare JSON
   * body that may take more than four chunks. A smaller one is faster
   * rendered whole into the buffer kept between requests (one send). A larger
   * one would need a buffer of its own per response in flight, faulted in
   * afresh each time: on 1,000,000 records with the cache off, streaming the
   * 57 MB dump took the mix from 0.28x to 0.57x of the ceiling, and the
   * server from 840 to 294 MB. (Text rows are a tenth of the size: a txt body
   * that large would take 760,000 rows.)
   */
  static open(store: Store, plan: Plan, rows: Uint32Array, n: number): JsonStream | null {
    if (!plan.json || plan.wrap) return null;
    const shape = jsonShape(plan);
    const rowBound = jsonRowBound(store, shape);
    return n * rowBound > 4 * CHUNK_BYTES ? new JsonStream(store, plan, shape, rowBound, rows, n) : null;
  }

  /** Writes the next chunk into `out` from its start; null once the whole body is written. */
  next(out: OutputBuffer): Uint8Array | null {
    const from = this.at;
    if (from >= this.n) return null;
    const to = Math.min(this.n, from + this.rowsPerChunk);
    out.reset();
    renderJsonPart(out, this.store, this.rows, from, to, this.n, this.shape, this.plan.lang);
    this.at = to;
    return out.view();
  }

  /**
   * Keeps its own copy of the rows: the selection it was given is a scratch
   * array that the next query overwrites.
   */
  detach(): void {
    this.rows = this.rows.slice(0, this.n);
  }
}
