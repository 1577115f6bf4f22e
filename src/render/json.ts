import { ANONS, RECORD_FIELDS, TYPES } from '../snapshot/format.js';
import type { Store } from '../store/store.js';
import { copyBytes, type OutputBuffer } from './output-buffer.js';

/**
 * JSON written byte for byte as `JSON.stringify(value, null, 2)` (pretty) or
 * `JSON.stringify(value)` would write it, without building the value: every
 * key with its indentation is encoded once per template, and every value is a
 * copy of bytes the store encoded at build time.
 */

const enc = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const TYPE_JSON = TYPES.map((t) => enc(JSON.stringify(t)));
const ANON_JSON = ANONS.map((a) => enc(JSON.stringify(a)));
const WORKS_JSON = Array.from({ length: 101 }, (_, w) => enc(`"${w}"`));
const TRUE = enc('true');
const FALSE = enc('false');
const QUOTE = 34;

// Field codes: RECORD_FIELDS indexes, then SERVICE + service index.
const F = Object.fromEntries(RECORD_FIELDS.map((f, i) => [f, i])) as Record<(typeof RECORD_FIELDS)[number], number>;
const SERVICE = RECORD_FIELDS.length;
/** Longest value per record field, with quotes: ip:port, port, ip_out, type, anon, -, timecheck, country, -, works. */
const MAX_VALUE = [23, 7, 17, 8, 13, 0, 21, 4, 0, 5];

export interface JsonShape {
  /** Keys to write, canonical names; null = all. */
  fields: string[] | null;
  splitIp: boolean;
  pretty: boolean;
  format: 'array' | 'object';
  /** Nesting of the records: 1 in a bare array or object, 2 inside the envelope. */
  depth: number;
}

interface Template {
  codes: number[];
  keys: Uint8Array[];
  /** Up to and including the record's `{`; for objects, up to the address. */
  open: Uint8Array;
  /** Objects only: from after the address to the record's `{`. */
  afterAddress: Uint8Array;
  close: Uint8Array;
  containerClose: Uint8Array;
  rowBound: number;
}

const templates = new WeakMap<Store, Map<string, Template>>();
const MAX_TEMPLATES = 256;

function templateFor(store: Store, shape: JsonShape): Template {
  const id = `${shape.fields?.join(',') ?? '*'}|${shape.splitIp}|${shape.pretty}|${shape.format}|${shape.depth}`;
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
    (name) => (shape.fields === null || shape.fields.includes(name)) && (name !== 'port' || shape.splitIp),
  );
  const codes = names.map((name) => (name in F ? F[name as keyof typeof F] : SERVICE + services.indexOf(name)));
  const nl = (depth: number): string => (shape.pretty ? '\n' + '  '.repeat(depth) : '');
  const colon = shape.pretty ? ': ' : ':';
  const keys = names.map((name, i) => enc(`${i > 0 ? ',' : ''}${nl(shape.depth + 1)}${JSON.stringify(name)}${colon}`));
  const object = shape.format === 'object';
  let rowBound = 64 + (shape.depth + 2) * 4;
  codes.forEach((code, i) => {
    rowBound += keys[i].length + (code >= SERVICE ? 5 : code === F.ping ? store.maxPingText : code === F.city ? store.maxCityJson : MAX_VALUE[code]);
  });
  return {
    codes,
    keys,
    open: enc(object ? `${nl(shape.depth)}"` : `${nl(shape.depth)}{`),
    afterAddress: enc(`"${colon}{`),
    close: enc(`${nl(shape.depth)}}`),
    containerClose: enc(`${nl(shape.depth - 1)}${object ? '}' : ']'}`),
    rowBound,
  };
}

/** Writes the array or object of `rows[0..n)`. */
export function renderJson(out: OutputBuffer, store: Store, rows: Uint32Array, n: number, shape: JsonShape, lang: 'ru' | 'en'): void {
  const object = shape.format === 'object';
  if (n === 0) {
    out.append(enc(object ? '{}' : '[]'));
    return;
  }
  const t = templateFor(store, shape);
  const c = store.c;
  const lines = c.lines.bytes;
  const lineOff = c.lines.off;
  const city = lang === 'ru' ? c.cityJsonRu : c.cityJsonEn;
  const { codes, keys } = t;
  let buf = out.reserve(1);
  buf[out.pos++] = object ? 123 : 91;
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    buf = out.reserve(t.rowBound);
    let pos = out.pos;
    if (i > 0) buf[pos++] = 44;
    pos = copyBytes(buf, pos, t.open, 0, t.open.length);
    const lineStart = lineOff[r];
    const addressEnd = lineOff[r + 1] - 1; // before the '\n'
    const ipEnd = lineStart + c.ipLen[r];
    if (object) {
      pos = copyBytes(buf, pos, lines, lineStart, addressEnd);
      pos = copyBytes(buf, pos, t.afterAddress, 0, t.afterAddress.length);
    }
    for (let k = 0; k < codes.length; k++) {
      const key = keys[k];
      pos = copyBytes(buf, pos, key, 0, key.length);
      const code = codes[k];
      switch (code) {
        case 0: // ip
          buf[pos++] = QUOTE;
          pos = copyBytes(buf, pos, lines, lineStart, shape.splitIp ? ipEnd : addressEnd);
          buf[pos++] = QUOTE;
          break;
        case 1: // port
          buf[pos++] = QUOTE;
          pos = copyBytes(buf, pos, lines, ipEnd + 1, addressEnd);
          buf[pos++] = QUOTE;
          break;
        case 2: // ip_out
          buf[pos++] = QUOTE;
          pos = copyBytes(buf, pos, c.ipOut.bytes, c.ipOut.off[r], c.ipOut.off[r + 1]);
          buf[pos++] = QUOTE;
          break;
        case 3:
          pos = copyBytes(buf, pos, TYPE_JSON[c.type[r]], 0, TYPE_JSON[c.type[r]].length);
          break;
        case 4:
          pos = copyBytes(buf, pos, ANON_JSON[c.anon[r]], 0, ANON_JSON[c.anon[r]].length);
          break;
        case 5: // ping
          pos = copyBytes(buf, pos, c.pingText.bytes, c.pingText.off[r], c.pingText.off[r + 1]);
          break;
        case 6: // timecheck
          buf[pos++] = QUOTE;
          pos = copyBytes(buf, pos, c.timecheck, r * 19, r * 19 + 19);
          buf[pos++] = QUOTE;
          break;
        case 7: {
          const country = store.countryJson[c.country[r]];
          pos = copyBytes(buf, pos, country, 0, country.length);
          break;
        }
        case 8: {
          const id = c.city[r];
          pos = copyBytes(buf, pos, city.bytes, city.off[id], city.off[id + 1]);
          break;
        }
        case 9:
          pos = copyBytes(buf, pos, WORKS_JSON[c.works[r]], 0, WORKS_JSON[c.works[r]].length);
          break;
        default: {
          const flag = (c.services[r] >>> (code - SERVICE)) & 1 ? TRUE : FALSE;
          pos = copyBytes(buf, pos, flag, 0, flag.length);
        }
      }
    }
    if (codes.length === 0) buf[pos++] = 125;
    else pos = copyBytes(buf, pos, t.close, 0, t.close.length);
    out.pos = pos;
  }
  out.append(t.containerClose);
}
