import { formatIsoOffset } from '../core/service-time.js';
import type { Plan } from '../query/plan.js';
import { ANONS, TYPES } from '../snapshot/format.js';
import type { Store } from '../store/store.js';
import { renderJson } from './json.js';
import type { OutputBuffer } from './output-buffer.js';
import { renderTxt } from './txt.js';

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

/** Writes the body of a successful /api response for the selected `rows[0..n)`. */
export function renderBody(out: OutputBuffer, store: Store, plan: Plan, rows: Uint32Array, n: number, nowMs: number): void {
  if (!plan.json) {
    renderTxt(out, store, rows, n, plan.typePrefix);
    return;
  }
  const shape = { fields: plan.fields, splitIp: plan.splitIp, pretty: plan.pretty, format: plan.format, depth: plan.wrap ? 2 : 1 };
  if (!plan.wrap) {
    renderJson(out, store, rows, n, shape, plan.lang);
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
