import { ANONS, FIELD, FIELD_TABLE, ON_REQUEST_FIELDS, RECORD_FIELDS, SERVICE_CODE, TYPES, type FieldName } from '../core/vocabulary.js';
import type { Store } from '../store/store.js';
import { utf8 as enc } from '../store/encode.js';
import type { OutputBuffer } from './output-buffer.js';
import { compileRowWriter, type RowMeasure, type RowShape, type RowWriter } from './row-writer.js';

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


const COMMA = enc(',');

/** The fields a record shows (docs/api.md, Parameters), in order: `fields`, else the default ones; `port` with split_ip only. */
export function outputFields(store: Store, fields: readonly string[] | null, splitIp: boolean): { names: string[]; codes: number[] } {
  const services = store.meta.services;
  const names = [...RECORD_FIELDS, ...services].filter(
    (name) => (fields === null ? !ON_REQUEST_FIELDS.has(name) : fields.includes(name)) && (name !== 'port' || splitIp),
  );
  return { names, codes: names.map((name) => (name in FIELD ? FIELD[name as FieldName] : SERVICE_CODE + services.indexOf(name))) };
}

/**
 * An upper bound of the bytes a row's values take with the keys before
 * them, and of what word copies write past its last value. A CSV value is
 * never longer than its JSON, but for the texts CSV keeps of its own.
 */
export function valuesBound(store: Store, codes: readonly number[], keys: readonly Uint8Array[], csv: boolean): number {
  let bound = 64;
  codes.forEach((code, i) => {
    bound += keys[i].length;
    if (code >= SERVICE_CODE) bound += 5;
    else if (code === FIELD.ping) bound += store.maxPingText;
    else if (code === FIELD.city) bound += csv ? store.maxCityCsv : store.maxCityJson;
    else if (code === FIELD.org) bound += csv ? store.maxOrgCsv : store.maxOrgJson;
    else if (code === FIELD.ip_out) bound += store.maxIpOutJson;
    else if (code === FIELD.ip) bound += store.meta.maxLineBytes + 1;
    else bound += FIELD_TABLE[code].maxJsonBytes!;
  });
  return bound;
}

/** The store's longest values, which a row writer copies as whole words. */
export const valueLengths = (store: Store, csv: boolean): Pick<RowShape, 'maxPing' | 'maxCity' | 'maxOrg' | 'exitsV6' | 'maxExitV6' | 'maxAddress' | 'maxIp' | 'entriesV6'> => ({
  maxPing: store.maxPingText,
  maxCity: csv ? store.maxCityCsv : store.maxCityJson,
  maxOrg: csv ? store.maxOrgCsv : store.maxOrgJson,
  exitsV6: store.meta.ipv6Exits > 0,
  maxExitV6: store.maxExitV6,
  maxAddress: Math.max(1, store.meta.maxLineBytes - 1),
  maxIp: Math.max(1, store.meta.maxIpBytes),
  entriesV6: store.meta.ipv6Entries > 0,
});

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

const templates = new WeakMap<Store, Map<string, unknown>>();
const MAX_TEMPLATES = 256;

/** The compiled template of a store named `id` (its shape), built once: JSON's and CSV's, a few hundred at most per store. */
export function storeTemplate<T>(store: Store, id: string, build: () => T): T {
  let cache = templates.get(store);
  if (!cache) templates.set(store, (cache = new Map()));
  let t = cache.get(id) as T | undefined;
  if (t === undefined) {
    if (cache.size >= MAX_TEMPLATES) cache.clear();
    cache.set(id, (t = build()));
  }
  return t;
}

const templateFor = (store: Store, shape: JsonShape): Template =>
  storeTemplate(store, `json|${shape.fields?.join(',') ?? '*'}|${shape.splitIp}|${shape.pretty}|${shape.format}|${shape.depth}|${shape.typeKeys}`, () => buildTemplate(store, shape));

function buildTemplate(store: Store, shape: JsonShape): Template {
  const { names, codes } = outputFields(store, shape.fields, shape.splitIp);
  const nl = (depth: number): string => (shape.pretty ? '\n' + '  '.repeat(depth) : '');
  const colon = shape.pretty ? ': ' : ':';
  const keys = names.map((name, i) => enc(`${i > 0 ? ',' : ''}${nl(shape.depth + 1)}${JSON.stringify(name)}${colon}`));
  const object = shape.format === 'object';
  const rowBound = (shape.depth + 2) * 4 + (shape.typeKeys ? 16 : 0) + (object ? store.meta.maxLineBytes + 1 : 0) + valuesBound(store, codes, keys, false);
  const { writeRows, measureRows } = compileRowWriter(
    {
      codes,
      keys,
      open: enc(object ? `${nl(shape.depth)}"` : `${nl(shape.depth)}{`),
      afterAddress: enc(`"${colon}{`),
      close: enc(`${nl(shape.depth)}}`),
      separator: COMMA,
      csv: false,
      object,
      typeKeys: object && shape.typeKeys,
      splitIp: shape.splitIp,
      ...valueLengths(store, false),
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
