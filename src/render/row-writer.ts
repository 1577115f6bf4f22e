import type { ByteStrings } from '../store/columns.js';
import type { Store } from '../store/store.js';
import { copyWords, dataView } from './output-buffer.js';

/**
 * Writes the JSON of many rows. Compiled once per output shape (fields,
 * split_ip, pretty, format, nesting): the field order is unrolled, keys,
 * quotes and punctuation between two values merge into one constant run, and
 * no per-field dispatch is left in the loop. The generated source holds only
 * numbers and fixed names: no text from a request or a snapshot ever becomes
 * code. With `ends`, the position after each row is recorded there.
 */
export type RowWriter = (buf: Uint8Array, pos: number, rows: Uint32Array, n: number, store: Store, lang: 'ru' | 'en', ends: Uint32Array | null) => number;

export interface RowShape {
  /** Field codes: 0..9 the record fields in canonical order, 10 + i service i. */
  codes: readonly number[];
  /** Per field, its key with punctuation and indentation before it. */
  keys: readonly Uint8Array[];
  /** Up to and including the record's `{`; for objects, up to the address's opening quote. */
  open: Uint8Array;
  /** Objects only: from the address's closing quote to the record's `{`. */
  afterAddress: Uint8Array;
  close: Uint8Array;
  object: boolean;
  splitIp: boolean;
}

const SERVICE = 10;

/** A piece of a row: constant bytes, or code that writes a value. */
type Part = Uint8Array | string;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (ch) => ch.charCodeAt(0));
const QUOTE = ascii('"');
const word32 = (b: Uint8Array, i: number): number => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
const TRUE = word32(ascii('true'), 0);
const FALS = word32(ascii('fals'), 0);

/** A double literal with exactly the bits of b[i..i+8), or null for a NaN (whose bits may change). */
function doubleAt(b: Uint8Array, i: number): string | null {
  const x = new DataView(b.buffer, b.byteOffset + i, 8).getFloat64(0, true);
  if (Number.isNaN(x)) return null;
  return Object.is(x, -0) ? '-0' : String(x); // the shortest text that reads back as the same double
}

/**
 * Constant bytes: eight at a time as float64 stores of literals (four at a
 * time as uint32 under eight bytes, or where eight read as a NaN), the last
 * word overlapping the previous ones; under four, one by one.
 */
function bytes(b: Uint8Array): string {
  const word = (i: number): string => `dv.setUint32(pos+${i},${word32(b, i)},true);`;
  const double = (i: number): string => {
    const x = doubleAt(b, i);
    return x === null ? word(i) + word(i + 4) : `dv.setFloat64(pos+${i},${x},true);`;
  };
  let s = '';
  if (b.length < 4) for (let i = 0; i < b.length; i++) s += `buf[pos+${i}]=${b[i]};`;
  else if (b.length < 8) s = word(0) + word(b.length - 4);
  else {
    for (let i = 0; i + 8 < b.length; i += 8) s += double(i);
    s += double(b.length - 8);
  }
  return `${s}pos+=${b.length};`;
}

/** Copies bytes [from, to) of a source at least four bytes long (`copyWords`); `src` names a DataView `<src>V`. */
const copy = (src: string, from: string, to: string): string => `pos=copyWords(dv,pos,${src}V,${from},${to});`;

/** The same for values that may be shorter (a port, a ping): those go byte by byte from `<src>B`. */
const copyShort = (src: string, from: string, to: string): string =>
  `{const s=${from},e=${to};if(e-s>=4)pos=copyWords(dv,pos,${src}V,s,e);else for(let j=s;j<e;j++)buf[pos++]=${src}B[j];}`;

/**
 * The same for sources with seven readable bytes after every item
 * (`packStrings`): whole 8-byte words only (UTF-8, see `copyWords`), up to
 * seven bytes past the value, which the next writes overwrite. No branch on
 * the length, which varies from row to row for cities and would be
 * mispredicted.
 */
const copyPadded = (src: string, from: string, to: string): string =>
  `{const e=${to};const d=pos-${from};for(let s=${from};s<e;s+=8)dv.setFloat64(d+s,${src}V.getFloat64(s,true),true);pos=d+e;}`;

function valueParts(code: number, splitIp: boolean): Part[] {
  switch (code) {
    case 0: return [QUOTE, copy('lines', 'ls', splitIp ? 'ie' : 'ae'), QUOTE];
    case 1: return [QUOTE, copyShort('lines', 'ie+1', 'ae'), QUOTE];
    case 2: return [QUOTE, copy('ipOut', 'ipOutO[r]', 'ipOutO[r+1]'), QUOTE];
    case 3: return ['{const t=type[r];' + copyPadded('typeJson', 'typeJsonO[t]', 'typeJsonO[t+1]') + '}'];
    case 4: return ['{const a=anon[r];' + copyPadded('anonJson', 'anonJsonO[a]', 'anonJsonO[a+1]') + '}'];
    case 5: return [copyShort('ping', 'pingO[r]', 'pingO[r+1]')];
    case 6: return [QUOTE, copy('tc', 'r*19', 'r*19+19'), QUOTE];
    case 7: return ['dv.setUint32(pos,countryV.getUint32(country[r]*4,true),true);pos+=4;'];
    case 8: return ['{const id=city[r];' + copyPadded('city', 'cityO[id]', 'cityO[id+1]') + '}'];
    case 9: return ['{const w=works[r];' + copyPadded('worksJson', 'worksJsonO[w]', 'worksJsonO[w+1]') + '}'];
    // Without a branch, which random bits would mispredict: `true` or `fals`, then an `e` that the
    // next constant overwrites after `true` (a row always ends with one).
    default: return [`{const t=(svc[r]>>>${code - SERVICE})&1;dv.setUint32(pos,${FALS}^(-t&${TRUE ^ FALS}),true);buf[pos+4]=101;pos+=5-t;}`];
  }
}

/** Joins neighbouring constants into one run. */
function merge(parts: Part[]): Part[] {
  const out: Part[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (p instanceof Uint8Array && last instanceof Uint8Array) out[out.length - 1] = Buffer.concat([last, p]);
    else out.push(p);
  }
  return out;
}

const emit = (p: Part): string => (typeof p === 'string' ? p : bytes(p));

export function compileRowWriter(shape: RowShape, constants: { TYPE_JSON: ByteStrings; ANON_JSON: ByteStrings; WORKS_JSON: ByteStrings }): RowWriter {
  const parts: Part[] = [shape.open];
  if (shape.object) parts.push(copy('lines', 'ls', 'ae'), shape.afterAddress);
  shape.codes.forEach((code, k) => parts.push(shape.keys[k], ...valueParts(code, shape.splitIp)));
  parts.push(shape.codes.length === 0 ? ascii('}') : shape.close);
  const [first, ...rest] = merge(parts) as [Uint8Array, ...Part[]];
  const body = [
    'for(let i=0;i<n;i++){',
    'const r=rows[i];',
    shape.object || shape.codes.some((c) => c <= 1) ? 'const ls=lineOff[r];const ae=lineOff[r+1]-1;const ie=ls+ipLen[r];' : '',
    // The comma between records joins the first constant run.
    `if(i!==0){${bytes(Buffer.concat([ascii(','), first]))}}else{${bytes(first)}}`,
    ...rest.map(emit),
    'if(ends!==null)ends[i]=pos;',
    '}',
    'return pos;',
  ];
  const source = `"use strict";
return function writeRows(buf, pos, rows, n, store, lang, ends) {
  const c = store.c;
    const dv = view(buf);
  const linesB = c.lines.bytes, linesV = view(linesB), lineOff = c.lines.off, ipLen = c.ipLen;
  const ipOutB = c.ipOut.bytes, ipOutV = view(ipOutB), ipOutO = c.ipOut.off;
  const pingB = c.pingText.bytes, pingV = view(pingB), pingO = c.pingText.off;
  const tcB = c.timecheck, tcV = view(tcB);
  const type = c.type, anon = c.anon, country = c.country, city = c.city, works = c.works, svc = c.services;
  const countryV = view(store.countryJson);
  const cityStrings = lang === 'ru' ? c.cityJsonRu : c.cityJsonEn;
  const cityB = cityStrings.bytes, cityV = view(cityB), cityO = cityStrings.off;
  const typeJsonB = TYPE_JSON.bytes, typeJsonV = view(typeJsonB), typeJsonO = TYPE_JSON.off;
  const anonJsonB = ANON_JSON.bytes, anonJsonV = view(anonJsonB), anonJsonO = ANON_JSON.off;
  const worksJsonB = WORKS_JSON.bytes, worksJsonV = view(worksJsonB), worksJsonO = WORKS_JSON.off;
  ${body.join('\n  ')}
};`;
  return new Function('TYPE_JSON', 'ANON_JSON', 'WORKS_JSON', 'copyWords', 'view', source)(constants.TYPE_JSON, constants.ANON_JSON, constants.WORKS_JSON, copyWords, dataView) as RowWriter;
}
