import { formatIsoOffset } from '../core/service-time.js';
import type { Plan } from '../query/plan.js';
import { ANONS, TYPES } from '../core/vocabulary.js';
import type { Store } from '../store/store.js';
import { containerClose, emptyContainer, jsonFrameLength, jsonRowBound, jsonRowsLength, renderJson, type JsonShape } from './json.js';
import { csvHeader, csvRemoves, csvRowBound, csvRowsLength, renderCsv, type CsvShape } from './csv.js';
import type { OutputBuffer } from './output-buffer.js';
import { TYPE_PREFIX, UPSERT_PREFIX, renderTxt, txtLength, txtRowBound, type LinePrefix } from './txt.js';

/** The effective filters of the envelope, keys in the order docs/api.md's Parameters give. */
export function envelopeFilters(plan: Plan): Record<string, unknown> {
  const f: Record<string, unknown> = {};
  if (plan.types) f.type = plan.types.map((t) => TYPES[t]);
  if (plan.anons) f.anon = plan.anons.map((a) => ANONS[a]);
  if (plan.ports) f.port = plan.ports;
  if (plan.ping !== null) f.ping = plan.ping;
  f.time = plan.time;
  if (plan.works !== null) f.works = plan.works;
  if (plan.countries) {
    f.country = plan.countries;
    f.cm = plan.countryMode;
  }
  if (plan.cities) f.city = plan.cities;
  if (plan.services) f.service = plan.services.map((s) => s.toLowerCase());
  if (plan.ips) f.ip = plan.ips.map((i) => i.text);
  if (plan.ipv) f.ipv = plan.ipv;
  if (plan.asns) f.asn = plan.asns;
  if (plan.hosting !== null) f.hosting = plan.hosting;
  if (plan.mobile !== null) f.mobile = plan.mobile;
  if (plan.sort !== null) f.sort = plan.sort;
  if (plan.offset !== null) f.offset = plan.offset;
  if (plan.count !== null) f.count = plan.count;
  return f;
}

/** The JSON shape of a plan's records. */
export function jsonShape(plan: Plan): JsonShape {
  return { fields: plan.fields, splitIp: plan.splitIp, pretty: plan.pretty, format: plan.format, depth: plan.wrap ? 2 : 1, typeKeys: false };
}

/** The CSV shape of a plan's records, or of a change set's upserts. */
export const csvShape = (plan: Plan, changes: boolean): CsvShape => ({ fields: plan.fields, splitIp: plan.splitIp, changes });

/** What a change set's body holds besides its upserts (docs/api.md, Keeping a list). */
export interface ChangeFrame {
  cursor: string;
  reset: boolean;
  /** Keys, sorted. */
  removes: readonly string[];
}

/** The head and foot around the upserts of a JSON change set: JSON.stringify writes them around a placeholder. */
function changeEnvelope(plan: Plan, changes: ChangeFrame): [head: string, foot: string] {
  const value = { cursor: changes.cursor, reset: changes.reset, upsert: null, remove: changes.removes };
  const text = plan.pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
  // The cursor and `reset` come first and hold no quote: the first `"upsert":` is the key.
  const at = text.indexOf('"upsert":') + (plan.pretty ? 10 : 9);
  return [text.slice(0, at), text.slice(at + 4)];
}

const NOTHING = new Uint8Array(0);

/**
 * The body of a successful /api response for the selected `rows[0..n)`,
 * written whole or a part at a time: the part for `rows[from..to)` carries
 * what comes before the first row (the envelope's start, the container's
 * opening) when from = 0, and what follows the last when to = n. Every
 * length is known before any byte is written, from the lengths of the values.
 */
export class BodyWriter {
  /** An upper bound of the bytes one row takes. */
  readonly rowBound: number;
  private readonly shape: JsonShape | null;
  private readonly csv: CsvShape | null;
  private readonly prefix: LinePrefix;
  /** The envelope around the records (wrap=1, or a change set's), CSV's header row and a change set's removes, else nothing. */
  private readonly head: Uint8Array = NOTHING;
  private readonly foot: Uint8Array = NOTHING;

  /** With `changes`, the body of a change set whose upserts are the rows. */
  constructor(readonly store: Store, readonly plan: Plan, readonly rows: Uint32Array, readonly n: number, nowMs: number, changes: ChangeFrame | null = null) {
    this.shape = plan.json ? (changes ? { ...jsonShape(plan), format: 'object', depth: 2, typeKeys: true } : jsonShape(plan)) : null;
    this.csv = plan.csv ? csvShape(plan, changes !== null) : null;
    this.prefix = changes ? UPSERT_PREFIX : plan.typePrefix ? TYPE_PREFIX : null;
    this.rowBound = this.shape ? jsonRowBound(store, this.shape) : this.csv ? csvRowBound(store, this.csv) : txtRowBound(store, this.prefix);
    if (this.csv) {
      this.head = csvHeader(store, this.csv);
      if (changes) this.foot = Buffer.from(csvRemoves(store, this.csv, changes.removes));
    } else if (changes) {
      const [head, foot] = plan.json ? changeEnvelope(plan, changes) : ['', changes.removes.map((key) => `-${key}\n`).join('')];
      this.head = Buffer.from(head);
      this.foot = Buffer.from(foot);
    } else if (plan.json && plan.wrap) {
      // The envelope is small: JSON.stringify writes it around a placeholder for `data`.
      const envelope = { status: 'ok', count: n, timestamp: formatIsoOffset(nowMs), filters: envelopeFilters(plan), data: 0 };
      const text = plan.pretty ? JSON.stringify(envelope, null, 2) : JSON.stringify(envelope);
      const at = text.lastIndexOf('0');
      this.head = Buffer.from(text.slice(0, at));
      this.foot = Buffer.from(text.slice(at + 1));
    }
  }

  /**
   * What follows the last row of a body without an envelope, cut after any
   * of its rows: the container's close (nothing for txt).
   */
  closeBytes(): Uint8Array {
    return this.shape ? containerClose(this.store, this.shape) : NOTHING;
  }

  /** The bytes of the text around the rows that this writer holds (a change set's removes can be many). */
  get frameBytes(): number {
    return this.head.length + this.foot.length;
  }

  /** The bytes outside the rows. */
  frameLength(): number {
    return this.head.length + this.foot.length + (this.shape ? jsonFrameLength(this.store, this.shape, this.n) : 0);
  }

  /** The bytes of `rows[from..to)`, separators included. */
  rowsLength(from: number, to: number): number {
    if (this.shape) return jsonRowsLength(this.store, this.rows, from, to, this.shape, this.plan.lang);
    if (this.csv) return csvRowsLength(this.store, this.rows, from, to, this.csv, this.plan.lang);
    return txtLength(this.store, this.rows, from, to, this.prefix);
  }

  /**
   * Writes the part for `rows[from..to)` at `out.pos`. With `ends` (bare JSON
   * and CSV only), the position in `out` after each record is recorded there.
   */
  write(out: OutputBuffer, from: number, to: number, ends: Uint32Array | null = null): void {
    if (from === 0 && this.head.length > 0) out.append(this.head);
    if (this.shape) renderJson(out, this.store, this.rows, from, to, this.n, this.shape, this.plan.lang, ends);
    else if (this.csv) renderCsv(out, this.store, this.rows, from, to, this.csv, this.plan.lang, ends);
    else renderTxt(out, this.store, this.rows, from, to, this.prefix);
    if (to === this.n && this.foot.length > 0) out.append(this.foot);
  }
}

/** A bare body (no envelope) for some rows: its bytes, a tail sent after them, and per JSON record or CSV row where it ends. */
export interface BareBody {
  bytes: Uint8Array;
  tail: Uint8Array | null;
  rows: Uint32Array;
  ends: Uint32Array | null;
}

/**
 * The body for the first `k` rows of a bare body, without copying: its bytes
 * up to the k-th record (their lengths are known for txt, recorded in `ends`
 * for JSON), then for JSON the container's close as the tail.
 */
export function narrowBody(store: Store, plan: Plan, body: Omit<BareBody, 'tail'>, k: number): BareBody {
  const rows = body.rows.subarray(0, k);
  if (plan.csv) {
    // The header row, then the first k rows.
    const cut = k === 0 ? csvHeader(store, csvShape(plan, false)).length : body.ends![k - 1];
    return { bytes: body.bytes.subarray(0, cut), tail: null, rows, ends: body.ends!.subarray(0, k) };
  }
  if (!body.ends) {
    const cut = body.bytes.length - txtLength(store, body.rows, k, body.rows.length, plan.typePrefix ? TYPE_PREFIX : null);
    return { bytes: body.bytes.subarray(0, cut), tail: null, rows, ends: null };
  }
  const shape = jsonShape(plan);
  const ends = body.ends.subarray(0, k);
  if (k === 0) return { bytes: emptyContainer(shape), tail: null, rows, ends };
  return { bytes: body.bytes.subarray(0, ends[k - 1]), tail: containerClose(store, shape), rows, ends };
}
