import { FIELD, SERVICE_CODE, TYPES } from '../core/vocabulary.js';
import { EXIT_IS_ENTRY } from '../store/columns.js';
import type { Store } from '../store/store.js';
import { dataView } from './output-buffer.js';

/**
 * Writes the JSON records (or CSV rows) of rows[from..to), each but the very
 * first (from = 0) after the separator, and returns the new position.
 * Compiled once per output shape (fields, split_ip, pretty, format, nesting,
 * JSON or CSV): the field order is unrolled,
 * keys, quotes and punctuation between two values merge into one constant
 * run, and no per-field dispatch is left in the loop. The generated source
 * holds only numbers and fixed names: no text from a request or a snapshot
 * ever becomes code. With `ends`, the position after row i is ends[i].
 */
export type RowWriter = (buf: Uint8Array, pos: number, rows: Uint32Array, from: number, to: number, store: Store, lang: 'ru' | 'en', ends: Uint32Array | null) => number;

/** The bytes that RowWriter writes for rows[from..to), computed from the value lengths alone. */
export type RowMeasure = (rows: Uint32Array, from: number, to: number, store: Store, lang: 'ru' | 'en') => number;

export interface RowShape {
  /** Field codes: the record fields' codes in canonical order (vocabulary.ts), SERVICE_CODE + i service i. */
  codes: readonly number[];
  /** Per field, its key with punctuation and indentation before it. */
  keys: readonly Uint8Array[];
  /** Up to and including the record's `{`; for objects, up to the address's opening quote. */
  open: Uint8Array;
  /** Objects only: from the address's closing quote to the record's `{`. */
  afterAddress: Uint8Array;
  close: Uint8Array;
  /** Between two rows: a comma in JSON, nothing in CSV (its rows end with CRLF). */
  separator: Uint8Array;
  /** CSV fields: no quotes around texts, CSV's own texts for city and org, nothing for an unknown AS number. */
  csv: boolean;
  /** The address before the values (JSON objects, CSV change sets). */
  object: boolean;
  /** Objects only: the key is `type://ip:port`. */
  typeKeys: boolean;
  splitIp: boolean;
  /** The store's longest ping text and city JSON, in bytes. */
  maxPing: number;
  maxCity: number;
  /** The longest organisation's JSON, in bytes. */
  maxOrg: number;
  /** Whether the store has IPv6 exits, and the longest of those it keeps a text of, in bytes. */
  exitsV6: boolean;
  maxExitV6: number;
  /** The store's longest `ip:port` and `ip` (brackets included), in bytes, and whether it has IPv6 entries. */
  maxAddress: number;
  maxIp: number;
  entriesV6: boolean;
}


/** The JSON of every value a small-domain field can take, by its stored code. */
export interface Domains {
  type: readonly Uint8Array[];
  anon: readonly Uint8Array[];
  works: readonly Uint8Array[];
  /** A network flag by its two bits (known, set). */
  flag: readonly Uint8Array[];
}

/**
 * Neighbouring fields of small domains (type, anon, works, services) are
 * written together from a table of every combination of their values, with
 * the keys between them: a fixed number of word copies and no branch per row.
 * A group grows while its table stays within these bounds (a long service
 * name ends a group, so the copy never grows past 32 words).
 */
const MAX_COMBINATIONS = 256;
const MAX_ENTRY_BYTES = 256;

/** Code that writes a value at `pos` and moves `pos` past it, and code that adds its length to `len`. */
interface Value {
  write: string;
  measure: string;
}

/** A piece of a row: constant bytes, or a value. */
type Part = Uint8Array | Value;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (ch) => ch.charCodeAt(0));
const QUOTE = ascii('"');
const BOOLEANS = [ascii('false'), ascii('true')];
/** Values up to this many words are copied whole; a longer city goes word by word to its end. */
const MAX_FIXED_WORDS = 8;

/**
 * A double literal whose big-endian bytes are b[i..i+8), or null for a NaN
 * (whose bits may change). Constants are stored big-endian, DataView's
 * default order, which V8 writes faster than little-endian.
 */
function doubleAt(b: Uint8Array, i: number): string | null {
  const x = new DataView(b.buffer, b.byteOffset + i, 8).getFloat64(0);
  if (Number.isNaN(x)) return null;
  return Object.is(x, -0) ? '-0' : String(x); // the shortest text that reads back as the same double
}

/**
 * Constant bytes: eight at a time as float64 stores of literals (four at a
 * time as uint32 under eight bytes, or where eight read as a NaN), the last
 * word overlapping the previous ones; under four, one by one.
 */
function bytes(b: Uint8Array): string {
  const word = (i: number): string => `dv.setUint32(pos+${i},${new DataView(b.buffer, b.byteOffset + i, 4).getUint32(0)});`;
  const double = (i: number): string => {
    const x = doubleAt(b, i);
    return x === null ? word(i) + word(i + 4) : `dv.setFloat64(pos+${i},${x});`;
  };
  let s = '';
  if (b.length < 4) for (let i = 0; i < b.length; i++) s += `buf[pos+${i}]=${b[i]};`;
  else if (b.length < 8) s = word(0) + (b.length > 4 ? word(b.length - 4) : '');
  else {
    for (let i = 0; i + 8 < b.length; i += 8) s += double(i);
    s += double(b.length - 8);
  }
  return `${s}pos+=${b.length};`;
}

/**
 * Copies the value of the byte column `<src>V` that starts at `from` and is
 * `length` bytes (an expression that may use the start `s`), at most `count`
 * words: always `count` whole words from its start, then `pos` moves by the
 * value's length. No branch on the length, which varies from row to row and
 * would be mispredicted. The words read past the value stay within the
 * column (READ_SLACK); the bytes written past it are overwritten by the next
 * writes, and the row bound leaves room for them. Moving UTF-8 as doubles is
 * exact (see `copyWords`).
 */
function words(src: string, from: string, length: string, count: number): Value {
  let write = `{const s=${from};`;
  for (let k = 0; k < count; k++) write += `dv.setFloat64(pos+${k * 8},${src}V.getFloat64(s+${k * 8},true),true);`;
  return { write: `${write}pos+=${length};}`, measure: `{const s=${from};len+=${length};}` };
}

/** Whole words to the value's end, however long: for a city longer than MAX_FIXED_WORDS words. */
const wordsToEnd = (src: string, from: string, to: string): Value => ({
  write: `{const e=${to};const d=pos-${from};for(let s=${from};s<e;s+=8)dv.setFloat64(d+s,${src}V.getFloat64(s,true),true);pos=d+e;}`,
  measure: `len+=${to}-${from};`,
});

/** Item `id` of the byte strings `<src>V`, `<src>O`, the longest `max` bytes: whole words, or word by word to its end when long. */
const strings = (src: string, id: string, max: number): Value =>
  wordsFor(max) <= MAX_FIXED_WORDS ? words(src, `${src}O[${id}]`, `${src}O[${id}+1]-s`, wordsFor(max)) : wordsToEnd(src, `${src}O[${id}]`, `${src}O[${id}+1]`);

/** The same value code around a statement that binds what it reads. */
const within = (before: string, v: Value): Value => ({ write: `{${before}${v.write}}`, measure: `{${before}${v.measure}}` });

const wordsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / 8));

/** The longest port, in bytes. */
const MAX_PORT = 5;
/** The longest AS number's JSON, `4294967295`, in bytes. */
const MAX_ASN_JSON = 10;

/**
 * The text of each octet value at a stride of 4 bytes: an address is written
 * from its number as four word copies, each followed by a dot that the next
 * one partly overwrites (3 octet bytes, then the dot, at most).
 */
const OCTETS = new Uint8Array(256 * 4);
const OCTET_LENGTHS = new Uint8Array(256);
for (let v = 0; v < 256; v++) {
  const text = `${v}.`;
  OCTET_LENGTHS[v] = text.length;
  for (let i = 0; i < text.length; i++) OCTETS[v * 4 + i] = text.charCodeAt(i);
}
const octet = (shift: number): string => `{const o=(a>>>${shift})&255;dv.setUint32(pos,octV.getUint32(o*4,true),true);pos+=octL[o];}`;
/**
 * ip_out: an IPv4 address from its number (the dot after the last octet
 * taken back); where the store has IPv6 exits, a row marked in `x6` copies
 * its exit's text instead.
 */
function ipOutValue(shape: RowShape): Value {
  const v4: Value = {
    write: `${octet(24)}${octet(16)}${octet(8)}${octet(0)}pos--;`,
    measure: 'len+=octL[a>>>24]+octL[(a>>>16)&255]+octL[(a>>>8)&255]+octL[a&255]-1;',
  };
  if (!shape.exitsV6) return within('const a=ipOut[r];', v4);
  const isV6 = '(x6[r>>>5]>>>(r&31)&1)!==0';
  let v6 = words('x6', 'x6O[a]', 'x6O[a+1]-s', wordsFor(shape.maxExitV6));
  if (shape.entriesV6) {
    // An exit that is the row's own entry: the line's address without its brackets.
    const own = words('lines', 'ls+1', 'ie-1-s', wordsFor(shape.maxIp));
    v6 = { write: `if(a===${EXIT_IS_ENTRY})${own.write}else${v6.write}`, measure: `if(a===${EXIT_IS_ENTRY})${own.measure}else${v6.measure}` };
  }
  return { write: `{const a=ipOut[r];if(${isV6}){${v6.write}}else{${v4.write}}}`, measure: `{const a=ipOut[r];if(${isV6}){${v6.measure}}else{${v4.measure}}}` };
}

/** `type://` per type code, at a stride of two words. */
const TYPE_KEYS = new Uint8Array(TYPES.length * 16);
const TYPE_KEY_LENGTHS = Uint8Array.from(TYPES, (t, i) => {
  const text = `${t}://`;
  for (let k = 0; k < text.length; k++) TYPE_KEYS[i * 16 + k] = text.charCodeAt(k);
  return text.length;
});
const TYPE_KEY: Value = {
  write: '{const t=type[r];dv.setFloat64(pos,tkV.getFloat64(t*16,true),true);dv.setFloat64(pos+8,tkV.getFloat64(t*16+8,true),true);pos+=tkL[t];}',
  measure: 'len+=tkL[type[r]];',
};

/** `ip:port` as the line has it (an IPv6 address bracketed). */
const address = (shape: RowShape): Value => words('lines', 'ls', 'ae-s', wordsFor(shape.maxAddress));

/** The line's address without its port, and without the brackets of an IPv6 one where the store has any. */
function bareIp(shape: RowShape): Value {
  const count = wordsFor(shape.maxIp);
  if (!shape.entriesV6) return words('lines', 'ls', 'ie-s', count);
  return within('const b=linesV.getUint8(ls)===91?1:0;', words('lines', 'ls+b', 'ie-b-s', count));
}

function valueParts(code: number, shape: RowShape): Part[] {
  // CSV writes these texts bare: none can hold a comma, a quote or a line break.
  const text = (v: Value): Part[] => (shape.csv ? [v] : [QUOTE, v, QUOTE]);
  const country = shape.csv ? 2 : 4;
  switch (code) {
    case FIELD.ip: return text(shape.splitIp ? bareIp(shape) : address(shape));
    case FIELD.port: return text(words('lines', 'ie+1', 'ae-s', wordsFor(MAX_PORT)));
    case FIELD.ip_out: return text(ipOutValue(shape));
    case FIELD.ping: return [within('const p=pingRank[r];', words('ping', 'pingO[p]', 'pingO[p+1]-s', wordsFor(shape.maxPing)))];
    case FIELD.timecheck: return text(words('tc', 'timeRank[r]*19', '19', wordsFor(19)));
    case FIELD.country: return [{ write: `dv.setUint32(pos,countryV.getUint32(country[r]*4,true),true);pos+=${country};`, measure: `len+=${country};` }];
    case FIELD.city: return [within('const id=city[r];', strings('city', 'id', shape.maxCity))];
    case FIELD.asn: return [within('const n=network[r];', words('nasn', 'nasnO[n]', 'nasnO[n+1]-s', wordsFor(MAX_ASN_JSON)))];
    case FIELD.org: return [within('const n=network[r];', strings('norg', 'n', shape.maxOrg))];
    default: throw new Error(`field ${code} is written in a group`);
  }
}

/** The values a small-domain field can take, and the code that reads a row's value; null for other fields. */
function domain(code: number, domains: Domains): { values: readonly Uint8Array[]; read: string } | null {
  if (code === FIELD.type) return { values: domains.type, read: 'type[r]' };
  if (code === FIELD.anon) return { values: domains.anon, read: 'anon[r]' };
  if (code === FIELD.works) return { values: domains.works, read: 'works[r]' };
  if (code === FIELD.hosting) return { values: domains.flag, read: '(nf[r]&3)' };
  if (code === FIELD.mobile) return { values: domains.flag, read: '((nf[r]>>>2)&3)' };
  if (code >= SERVICE_CODE) return { values: BOOLEANS, read: `((svc[r]>>>${code - SERVICE_CODE})&1)` };
  return null;
}

/** Every combination of a group's values, keys between them, at a fixed stride of whole words. */
export interface GroupTable {
  bytes: Uint8Array;
  lengths: Int32Array;
  stride: number;
}

function groupTable(members: ReadonlyArray<{ values: readonly Uint8Array[]; key: Uint8Array }>): GroupTable {
  const combos = members.reduce((n, m) => n * m.values.length, 1);
  const entries: Uint8Array[] = [];
  for (let x = 0; x < combos; x++) {
    // The last member varies fastest, as the index expression reads it.
    const pieces: Uint8Array[] = [];
    let rest = x;
    for (let m = members.length - 1; m >= 0; m--) {
      const d = members[m].values.length;
      pieces.unshift(...(m > 0 ? [members[m].key] : []), members[m].values[rest % d]);
      rest = Math.floor(rest / d);
    }
    entries.push(Buffer.concat(pieces));
  }
  const stride = Math.ceil(Math.max(8, ...entries.map((e) => e.length)) / 8) * 8;
  const bytes = new Uint8Array(combos * stride);
  entries.forEach((e, x) => bytes.set(e, x * stride));
  return { bytes, lengths: Int32Array.from(entries, (e) => e.length), stride };
}

/** Writes group `g`: whole words from its table, the padding after the value overwritten by the next writes. */
function groupValue(g: number, table: GroupTable, index: string): Value {
  let write = `const o=x*${table.stride};`;
  for (let i = 0; i < table.stride; i += 8) write += `dv.setFloat64(pos+${i},g${g}V.getFloat64(o+${i},true),true);`;
  return within(`const x=${index};`, { write: `${write}pos+=g${g}L[x];`, measure: `len+=g${g}L[x];` });
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

export function compileRowWriter(shape: RowShape, domains: Domains): { writeRows: RowWriter; measureRows: RowMeasure } {
  const parts: Part[] = [shape.open];
  if (shape.object) parts.push(...(shape.typeKeys ? [TYPE_KEY] : []), address(shape), shape.afterAddress);
  const groups: GroupTable[] = [];
  for (let k = 0; k < shape.codes.length; ) {
    parts.push(shape.keys[k]);
    const first = domain(shape.codes[k], domains);
    if (!first) {
      parts.push(...valueParts(shape.codes[k], shape));
      k++;
      continue;
    }
    const members = [{ ...first, key: shape.keys[k] }];
    let table = groupTable(members);
    for (k++; k < shape.codes.length; k++) {
      const next = domain(shape.codes[k], domains);
      if (!next) break;
      const grown = [...members, { ...next, key: shape.keys[k] }];
      if (table.lengths.length * next.values.length > MAX_COMBINATIONS) break;
      const grownTable = groupTable(grown);
      if (grownTable.stride > MAX_ENTRY_BYTES) break;
      members.push(grown[grown.length - 1]);
      table = grownTable;
    }
    const index = members.reduce((expr, m, i) => (i === 0 ? m.read : `(${expr})*${m.values.length}+${m.read}`), '');
    parts.push(groupValue(groups.length, table, index));
    groups.push(table);
  }
  parts.push(shape.codes.length === 0 && !shape.csv ? ascii('}') : shape.close);
  const [first, ...rest] = merge(parts) as [Uint8Array, ...Part[]];
  const values = rest.filter((p): p is Value => !(p instanceof Uint8Array));
  const constantBytes = first.length + rest.reduce((n, p) => n + (p instanceof Uint8Array ? p.length : 0), 0);
  const row = [
    'const r=rows[i];',
    // The line's offsets: for the address, and for an exit that is the row's IPv6 entry.
    shape.object || shape.codes.some((c) => c <= 1) || (shape.entriesV6 && shape.exitsV6 && shape.codes.includes(FIELD.ip_out)) ? 'const ls=lineOff[r];const ae=lineOff[r+1]-1;const ie=ls+ipLen[r];' : '',
  ];
  const writeLoop = [
    'for(let i=from;i<to;i++){',
    ...row,
    // The separator between rows joins the first constant run.
    shape.separator.length === 0 ? bytes(first) : `if(i!==0){${bytes(Buffer.concat([shape.separator, first]))}}else{${bytes(first)}}`,
    ...rest.map((p) => (p instanceof Uint8Array ? bytes(p) : p.write)),
    'if(ends!==null)ends[i]=pos;',
    '}',
    'return pos;',
  ];
  const measureLoop = [
    // Each row's constants, and the separator before each row but the very first.
    `let len=(to-from)*${constantBytes + shape.separator.length}-(from===0&&to>0?${shape.separator.length}:0);`,
    'for(let i=from;i<to;i++){',
    ...row,
    ...values.map((v) => v.measure),
    '}',
    'return len;',
  ];
  // The store's texts of the output: `countryJson` or `countryCsv`, and so on.
  const as = shape.csv ? 'Csv' : 'Json';
  const columns = `const c = store.c;
  const linesV = view(c.lines.bytes), lineOff = c.lines.off, ipLen = c.ipLen;
  const ipOut = c.ipOut, octV = view(octets), octL = octetLengths, tkV = view(typeKeys), tkL = typeKeyLengths;
  const x6 = c.exitV6Bits.data, x6V = view(c.exitV6Text.bytes), x6O = c.exitV6Text.off;
  const pingRank = c.pingRank, pingV = view(c.pingText.bytes), pingO = c.pingText.off;
  const timeRank = c.timeRank, tcV = view(c.timecheck);
  const type = c.type, anon = c.anon, country = c.country, city = c.city, works = c.works, svc = c.services;
  ${groups.map((_, g) => `const g${g}V = view(groups[${g}].bytes), g${g}L = groups[${g}].lengths;`).join('\n  ')}
  const countryV = view(store.country${as});
  const cityStrings = lang === 'ru' ? c.city${as}Ru : c.city${as}En;
  const cityV = view(cityStrings.bytes), cityO = cityStrings.off;
  const network = c.network, nf = c.netFlags, nasnV = view(c.networkAsn${as}.bytes), nasnO = c.networkAsn${as}.off, norgV = view(c.networkOrg${as}.bytes), norgO = c.networkOrg${as}.off;`;
  const source = `"use strict";
return {
  writeRows(buf, pos, rows, from, to, store, lang, ends) {
  ${columns}
  const dv = view(buf);
  ${writeLoop.join('\n  ')}
  },
  measureRows(rows, from, to, store, lang) {
  ${columns}
  ${measureLoop.join('\n  ')}
  },
};`;
  return new Function('groups', 'view', 'octets', 'octetLengths', 'typeKeys', 'typeKeyLengths', source)(groups, dataView, OCTETS, OCTET_LENGTHS, TYPE_KEYS, TYPE_KEY_LENGTHS) as { writeRows: RowWriter; measureRows: RowMeasure };
}
