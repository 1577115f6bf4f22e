import { formatIsoOffset } from '../core/service-time.js';
import type { Plan } from '../query/plan.js';
import { ANONS, TYPES } from '../snapshot/format.js';
import type { Store } from '../store/store.js';
import { containerClose, emptyContainer, renderJson, type JsonShape } from './json.js';
import type { OutputBuffer } from './output-buffer.js';
import { renderTxt, txtLength } from './txt.js';

/** The effective filters of the envelope, keys in the order API.md 1.3 gives. */
export function envelopeFilters(plan: Plan): Record<string, unknown> {
  const f: Record<string, unknown> = {};
  if (plan.types) f.type = plan.types.map((t) => TYPES[t]);
  if (plan.anons) f.anon = plan.anons.map((a) => ANONS[a]);
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
  if (plan.count !== null) f.count = plan.count;
  return f;
}

/** The JSON shape of a plan's records. */
export function jsonShape(plan: Plan): JsonShape {
  return { fields: plan.fields, splitIp: plan.splitIp, pretty: plan.pretty, format: plan.format, depth: plan.wrap ? 2 : 1 };
}

/**
 * Writes the body of a successful /api response for the selected `rows[0..n)`.
 * With `ends` (bare JSON only), the position after each record is recorded there.
 */
export function renderBody(out: OutputBuffer, store: Store, plan: Plan, rows: Uint32Array, n: number, nowMs: number, ends: Uint32Array | null = null): void {
  if (!plan.json) {
    renderTxt(out, store, rows, n, plan.typePrefix);
    return;
  }
  const shape = jsonShape(plan);
  if (!plan.wrap) {
    renderJson(out, store, rows, n, shape, plan.lang, ends);
    return;
  }
  // The envelope is small: JSON.stringify writes it around a placeholder for `data`.
  const envelope = { status: 'ok', count: n, timestamp: formatIsoOffset(nowMs), filters: envelopeFilters(plan), data: 0 };
  const text = plan.pretty ? JSON.stringify(envelope, null, 2) : JSON.stringify(envelope);
  const at = text.lastIndexOf('0');
  out.append(Buffer.from(text.slice(0, at)));
  renderJson(out, store, rows, n, shape, plan.lang);
  out.append(Buffer.from(text.slice(at + 1)));
}

/** A bare body (no envelope) for some rows: its bytes, a tail sent after them, and per JSON record where it ends. */
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
  if (!body.ends) {
    const cut = body.bytes.length - txtLength(store, body.rows, k, body.rows.length, plan.typePrefix);
    return { bytes: body.bytes.subarray(0, cut), tail: null, rows, ends: null };
  }
  const shape = jsonShape(plan);
  const ends = body.ends.subarray(0, k);
  if (k === 0) return { bytes: emptyContainer(shape), tail: null, rows, ends };
  return { bytes: body.bytes.subarray(0, ends[k - 1]), tail: containerClose(store, shape), rows, ends };
}
