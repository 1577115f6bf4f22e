import { ANONS, TYPES } from '../core/vocabulary.js';
import { csvField, utf8 as enc } from '../store/encode.js';
import type { Store } from '../store/store.js';
import { outputFields, storeTemplate, valueLengths, valuesBound } from './json.js';
import type { OutputBuffer } from './output-buffer.js';
import { compileRowWriter, type RowMeasure, type RowWriter } from './row-writer.js';

/**
 * CSV (RFC 4180; docs/api.md, CSV): a header row naming the columns, then a
 * row per record, each line ended by CRLF. The columns are JSON's fields in
 * JSON's order; values are written by the same compiled row writer as JSON's,
 * without quotes around texts that cannot need them, and with the city and
 * organisation as CSV fields the store encoded at build time.
 */

const CSV_DOMAINS = {
  type: TYPES.map(enc),
  anon: ANONS.map(enc),
  works: Array.from({ length: 101 }, (_, w) => enc(String(w))),
  // By the flag's two bits of `netFlags`: unknown, known false, (none), known true.
  flag: ['', 'false', '', 'true'].map(enc),
};
const CRLF = '\r\n';
const NOTHING = new Uint8Array(0);

export interface CsvShape {
  /** Columns to write, canonical names; null = JSON's default fields. */
  fields: string[] | null;
  splitIp: boolean;
  /** A change set's rows: `op` and `key` before the columns. */
  changes: boolean;
}

interface CsvTemplate {
  header: Uint8Array;
  writeRows: RowWriter;
  measureRows: RowMeasure;
  rowBound: number;
  /** What follows a remove row's key: an empty value per column, then CRLF. */
  removeTail: string;
}

const templateFor = (store: Store, shape: CsvShape): CsvTemplate =>
  storeTemplate(store, `csv|${shape.fields?.join(',') ?? '*'}|${shape.splitIp}|${shape.changes}`, () => buildTemplate(store, shape));

function buildTemplate(store: Store, shape: CsvShape): CsvTemplate {
  const { names, codes } = outputFields(store, shape.fields, shape.splitIp);
  const keys = names.map((_, i) => enc(i > 0 ? ',' : ''));
  const header = [...(shape.changes ? ['op', 'key'] : []), ...names].map(csvField).join(',') + CRLF;
  const { writeRows, measureRows } = compileRowWriter(
    {
      codes,
      keys,
      open: enc(shape.changes ? 'upsert,' : ''),
      afterAddress: enc(codes.length > 0 ? ',' : ''),
      close: enc(CRLF),
      separator: NOTHING,
      csv: true,
      object: shape.changes,
      typeKeys: shape.changes,
      splitIp: shape.splitIp,
      ...valueLengths(store, true),
    },
    CSV_DOMAINS,
  );
  const rowBound = (shape.changes ? 24 + store.meta.maxLineBytes : 0) + valuesBound(store, codes, keys, true);
  return { header: enc(header), writeRows, measureRows, rowBound, removeTail: ','.repeat(codes.length) + CRLF };
}

/** The header row. */
export const csvHeader = (store: Store, shape: CsvShape): Uint8Array => templateFor(store, shape).header;

/** A change set's remove rows, for keys sorted as they are to be listed. */
export function csvRemoves(store: Store, shape: CsvShape, keys: readonly string[]): string {
  const tail = templateFor(store, shape).removeTail;
  return keys.map((key) => `remove,${key}${tail}`).join('');
}

/** Writes the rows of `rows[from..to)`; with `ends`, the position after row i is recorded at ends[i]. */
export function renderCsv(out: OutputBuffer, store: Store, rows: Uint32Array, from: number, to: number, shape: CsvShape, lang: 'ru' | 'en', ends: Uint32Array | null = null): void {
  if (from >= to) return;
  const t = templateFor(store, shape);
  // One reservation for the worst case of the whole part: no growth while writing rows.
  const buf = out.reserve((to - from) * t.rowBound);
  out.pos = t.writeRows(buf, out.pos, rows, from, to, store, lang, ends);
}

/** The bytes of the rows `rows[from..to)`. */
export function csvRowsLength(store: Store, rows: Uint32Array, from: number, to: number, shape: CsvShape, lang: 'ru' | 'en'): number {
  return from >= to ? 0 : templateFor(store, shape).measureRows(rows, from, to, store, lang);
}

/** An upper bound of the bytes one row takes. */
export const csvRowBound = (store: Store, shape: CsvShape): number => templateFor(store, shape).rowBound;
