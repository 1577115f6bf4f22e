import type { Plan } from '../query/plan.js';
import type { Store } from '../store/store.js';
import { jsonShape } from './body.js';
import { jsonLength, jsonRowBound, renderJsonPart, type JsonShape } from './json.js';
import type { OutputBuffer } from './output-buffer.js';
import { renderTxt, txtLength, txtRowBound } from './txt.js';

/**
 * About this many bytes are written per chunk: small enough to stay in the
 * core's cache between being written and being copied to the socket, large
 * enough that the calls per chunk cost little.
 */
export const CHUNK_BYTES = 128 * 1024;

const rowBound = (store: Store, plan: Plan): number => (plan.json ? jsonRowBound(store, jsonShape(plan)) : txtRowBound(plan.typePrefix));

/**
 * A bare body (txt, or JSON without the envelope) written a chunk of rows at
 * a time into one small buffer, each chunk sent before the next is written,
 * instead of the whole body at once into pages of its own. Its length is
 * known before any byte is written, from the lengths of the values.
 */
export class BodyStream {
  readonly total: number;
  private rows: Uint32Array;
  /** Rows before this index of `rows` are written. */
  private at = 0;
  private readonly rowsPerChunk: number;
  private readonly shape: JsonShape | null;

  constructor(
    private readonly store: Store,
    private readonly plan: Plan,
    rows: Uint32Array,
    private readonly n: number,
  ) {
    this.rows = rows;
    this.shape = plan.json ? jsonShape(plan) : null;
    this.total = this.shape ? jsonLength(store, rows, n, this.shape, plan.lang) : txtLength(store, rows, 0, n, plan.typePrefix);
    this.rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / rowBound(store, plan)));
  }

  /** True when streaming pays: a bare body of rows that may take more than two chunks. */
  static suits(store: Store, plan: Plan, n: number): boolean {
    return !(plan.json && plan.wrap) && n * rowBound(store, plan) > 2 * CHUNK_BYTES;
  }

  /** Writes the next chunk into `out` from its start; null once the whole body is written. */
  next(out: OutputBuffer): Uint8Array | null {
    const from = this.at;
    if (from >= this.n) return null;
    const to = Math.min(this.n, from + this.rowsPerChunk);
    out.reset();
    if (this.shape) renderJsonPart(out, this.store, this.rows, from, to, this.n, this.shape, this.plan.lang);
    else renderTxt(out, this.store, this.rows.subarray(from, to), to - from, this.plan.typePrefix);
    this.at = to;
    return out.view();
  }

  /**
   * Keeps its own copy of the rows still to be written: the selection it was
   * given is a scratch array that the next query overwrites.
   */
  detach(): void {
    this.rows = this.rows.slice(0, this.n);
  }
}
