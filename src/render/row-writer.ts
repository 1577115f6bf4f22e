import type { Store } from '../store/store.js';

/**
 * Writes the JSON of many rows. Compiled once per output shape (fields,
 * split_ip, pretty, format, nesting): keys and punctuation become constant
 * byte stores, the field order is unrolled, and no per-field dispatch is
 * left in the loop, which more than halves the cost of a row against a
 * generic loop. The generated source holds only numbers and fixed names:
 * no text from a request or a snapshot ever becomes code. With `ends`, the
 * position after each row is recorded there.
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

/** Constant bytes: four at a time through a DataView (unaligned stores are fine), then the rest one by one. */
const bytes = (b: Uint8Array): string => {
  let s = '';
  let i = 0;
  for (; i + 4 <= b.length; i += 4) s += `dv.setUint32(pos+${i},${(b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0},true);`;
  for (; i < b.length; i++) s += `buf[pos+${i}]=${b[i]};`;
  return `${s}pos+=${b.length};`;
};
const copy = (src: string, from: string, to: string): string => `for(let j=${from};j<${to};j++)buf[pos++]=${src}[j];`;
const QUOTE = 'buf[pos++]=34;';

function valueCode(code: number, splitIp: boolean): string {
  switch (code) {
    case 0: return QUOTE + copy('lines', 'ls', splitIp ? 'ie' : 'ae') + QUOTE;
    case 1: return QUOTE + copy('lines', 'ie+1', 'ae') + QUOTE;
    case 2: return QUOTE + copy('ipOutB', 'ipOutO[r]', 'ipOutO[r+1]') + QUOTE;
    case 3: return '{const v=TYPE_JSON[type[r]];' + copy('v', '0', 'v.length') + '}';
    case 4: return '{const v=ANON_JSON[anon[r]];' + copy('v', '0', 'v.length') + '}';
    case 5: return copy('pingB', 'pingO[r]', 'pingO[r+1]');
    case 6: return QUOTE + '{const o=r*19;for(let j=0;j<19;j++)buf[pos+j]=tc[o+j];pos+=19;}' + QUOTE;
    case 7: return '{const v=countryJson[country[r]];buf[pos]=v[0];buf[pos+1]=v[1];buf[pos+2]=v[2];buf[pos+3]=v[3];pos+=4;}';
    case 8: return '{const id=city[r];' + copy('cityB', 'cityO[id]', 'cityO[id+1]') + '}';
    case 9: return '{const v=WORKS_JSON[works[r]];' + copy('v', '0', 'v.length') + '}';
    default: {
      const bit = code - SERVICE;
      return `if((svc[r]>>>${bit})&1){buf[pos]=116;buf[pos+1]=114;buf[pos+2]=117;buf[pos+3]=101;pos+=4;}else{buf[pos]=102;buf[pos+1]=97;buf[pos+2]=108;buf[pos+3]=115;buf[pos+4]=101;pos+=5;}`;
    }
  }
}

export function compileRowWriter(shape: RowShape, constants: { TYPE_JSON: Uint8Array[]; ANON_JSON: Uint8Array[]; WORKS_JSON: Uint8Array[] }): RowWriter {
  const body: string[] = [];
  body.push('for(let i=0;i<n;i++){', 'const r=rows[i];', 'if(i!==0)buf[pos++]=44;', bytes(shape.open));
  body.push('const ls=lineOff[r];const ae=lineOff[r+1]-1;const ie=ls+ipLen[r];');
  if (shape.object) body.push(copy('lines', 'ls', 'ae'), bytes(shape.afterAddress));
  shape.codes.forEach((code, k) => body.push(bytes(shape.keys[k]), valueCode(code, shape.splitIp)));
  body.push(shape.codes.length === 0 ? 'buf[pos++]=125;' : bytes(shape.close), 'if(ends!==null)ends[i]=pos;', '}', 'return pos;');
  const source = `"use strict";
return function writeRows(buf, pos, rows, n, store, lang, ends) {
  const c = store.c;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const lines = c.lines.bytes, lineOff = c.lines.off, ipLen = c.ipLen;
  const ipOutB = c.ipOut.bytes, ipOutO = c.ipOut.off, type = c.type, anon = c.anon;
  const pingB = c.pingText.bytes, pingO = c.pingText.off, tc = c.timecheck, country = c.country;
  const countryJson = store.countryJson, city = c.city, works = c.works, svc = c.services;
  const cityStrings = lang === 'ru' ? c.cityJsonRu : c.cityJsonEn;
  const cityB = cityStrings.bytes, cityO = cityStrings.off;
  ${body.join('\n  ')}
};`;
  return new Function('TYPE_JSON', 'ANON_JSON', 'WORKS_JSON', source)(constants.TYPE_JSON, constants.ANON_JSON, constants.WORKS_JSON) as RowWriter;
}
