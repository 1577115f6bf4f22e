import { ANONS, FIELD, FIELD_TABLE, ON_REQUEST_FIELDS, RECORD_FIELDS, SERVICE_CODE, TYPES, type FieldName } from '../core/vocabulary.js';
import type { Store } from '../store/store.js';
import { utf8 as enc } from '../store/encode.js';
import type { OutputBuffer } from './output-buffer.js';
import { compileRowWriter, type RowMeasure, type RowWriter } from './row-writer.js';

/**
 * JSON written byte for byte as `JSON.stringify(value, null, 2)` (pretty) or
 * `JSON.stringify(value)` would write it, without building the value: every
 * key with its indentation is encoded once per template, and every value is a
 * copy of bytes the store encoded at build time.
 */

const DOMAINS = {
  type: TYPES.map((t) => enc(JSON.stringify(t))),
  anon: ANONS.map((a) => enc(JSON.stringify(a))),
  works: Array.from({ length: 101 }, (_, w) => enc(`"${w}"`)),
  // By the flag's two bits of `netFlags`: unknown, known false, (none), known true.
  flag: ['null', 'false', 'null', 'true'].map(enc),
};


export interface JsonShape {
  /** Keys to write, canonical names; null = all. */
  fields: string[] | null;
  splitIp: boolean;
  pretty: boolean;
  format: 'array' | 'object';
  /** Nesting of the records: 1 in a bare array or object, 2 inside the envelope. */
  depth: number;
  /** Objects keyed `type://ip:port` (a change set's upserts), not `ip:port`. */
  typeKeys: boolean;
}

interface Template {
  writeRows: RowWriter;
  measureRows: RowMeasure;
  containerClose: Uint8Array;
  rowBound: number;
}

const templates = new WeakMap<Store, Map<string, Template>>();
const MAX_TEMPLATES = 256;

function templateFor(store: Store, shape: JsonShape): Template {
  const id = `${shape.fields?.join(',') ?? '*'}|${shape.splitIp}|${shape.pretty}|${shape.format}|${shape.depth}|${shape.typeKeys}`;
  let cache = templates.get(store);
  if (!cache) templates.set(store, (cache = new Map()));
  let t = cache.get(id);
  if (!t) {
    if (cache.size >= MAX_TEMPLATES) cache.clear();
    cache.set(id, (t = buildTemplate(store, shape)));
  }
  return t;
}

function buildTemplate(store: Store, shape: JsonShape): Template {
  const services = store.meta.services;
  const names = [...RECORD_FIELDS, ...services].filter(
    (name) => (shape.fields === null ? !ON_REQUEST_FIELDS.has(name) : shape.fields.includes(name)) && (name !== 'port' || shape.splitIp),
  );
  const codes = names.map((name) => (name in FIELD ? FIELD[name as FieldName] : SERVICE_CODE + services.indexOf(name)));
  const nl = (depth: number): string => (shape.pretty ? '\n' + '  '.repeat(depth) : '');
  const colon = shape.pretty ? ': ' : ':';
  const keys = names.map((name, i) => enc(`${i > 0 ? ',' : ''}${nl(shape.depth + 1)}${JSON.stringify(name)}${colon}`));
  const object = shape.format === 'object';
  let rowBound = 64 + (shape.depth + 2) * 4 + (shape.typeKeys ? 16 : 0) + (object ? store.meta.maxLineBytes + 1 : 0);
  codes.forEach((code, i) => {
    rowBound += keys[i].length + (code >= SERVICE_CODE ? 5 : code === FIELD.ping ? store.maxPingText : code === FIELD.city ? store.maxCityJson : code === FIELD.org ? store.maxOrgJson : code === FIELD.ip_out ? store.maxIpOutJson : code === FIELD.ip ? store.meta.maxLineBytes + 1 : FIELD_TABLE[code].maxJsonBytes!);
  });
  const { writeRows, measureRows } = compileRowWriter(
    {
      codes,
      keys,
      open: enc(object ? `${nl(shape.depth)}"` : `${nl(shape.depth)}{`),
      afterAddress: enc(`"${colon}{`),
      close: enc(`${nl(shape.depth)}}`),
      object,
      typeKeys: object && shape.typeKeys,
      splitIp: shape.splitIp,
      maxPing: store.maxPingText,
      maxCity: store.maxCityJson,
      maxOrg: store.maxOrgJson,
      exitsV6: store.meta.ipv6Exits > 0,
      maxExitV6: store.maxExitV6,
      maxAddress: Math.max(1, store.meta.maxLineBytes - 1),
      maxIp: Math.max(1, store.meta.maxIpBytes),
      entriesV6: store.meta.ipv6Entries > 0,
    },
    DOMAINS,
  );
  return { writeRows, measureRows, containerClose: enc(`${nl(shape.depth - 1)}${object ? '}' : ']'}`), rowBound };
}

const EMPTY = { array: enc('[]'), object: enc('{}') };

/** The bytes that close the array or object of records of this shape. */
export function containerClose(store: Store, shape: JsonShape): Uint8Array {
  return templateFor(store, shape).containerClose;
}

/** The whole body for no records. */
export function emptyContainer(shape: JsonShape): Uint8Array {
  return EMPTY[shape.format];
}

/**
 * Writes the part of the array or object of `rows[0..n)` that holds
 * `rows[from..to)`: the container's opening before the first row, its close
 * after row n - 1. With `ends`, the position after each record is recorded
 * there: the first k records, then the container's close, are the body for
 * `rows[0..k)`.
 */
export function renderJson(out: OutputBuffer, store: Store, rows: Uint32Array, from: number, to: number, n: number, shape: JsonShape, lang: 'ru' | 'en', ends: Uint32Array | null = null): void {
  if (n === 0) {
    out.append(EMPTY[shape.format]);
    return;
  }
  const t = templateFor(store, shape);
  // One reservation for the worst case of the whole part: no growth while writing rows.
  const buf = out.reserve(1 + (to - from) * t.rowBound + t.containerClose.length);
  let pos = out.pos;
  if (from === 0) buf[pos++] = shape.format === 'object' ? 123 : 91;
  pos = t.writeRows(buf, pos, rows, from, to, store, lang, ends);
  out.pos = pos;
  if (to === n) out.append(t.containerClose);
}

/** The bytes of the records `rows[from..to)` of a body, commas included (none before the very first). */
export function jsonRowsLength(store: Store, rows: Uint32Array, from: number, to: number, shape: JsonShape, lang: 'ru' | 'en'): number {
  return from >= to ? 0 : templateFor(store, shape).measureRows(rows, from, to, store, lang);
}

/** The bytes of a body of `n` records outside the records: the container's open and close. */
export function jsonFrameLength(store: Store, shape: JsonShape, n: number): number {
  return n === 0 ? EMPTY[shape.format].length : 1 + templateFor(store, shape).containerClose.length;
}

/** An upper bound of the bytes one row takes. */
export function jsonRowBound(store: Store, shape: JsonShape): number {
  return templateFor(store, shape).rowBound;
}
