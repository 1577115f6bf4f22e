import { mappedIPv4, parseIPv6Bytes } from '../core/ipv6.js';
import { FIELD_TABLE, MAX_ASN, parseIPv4Bytes } from '../core/vocabulary.js';
import { skipValue, Truncated } from './msgpack-walk.js';
import { MAX_STRING_BYTES } from './format.js';

/**
 * Reads one snapshot record straight from its MessagePack bytes into plain
 * fields, checking it against the snapshot contract (docs/snapshot.md) on the way. No object, and no
 * string but the city key, is made per record: a million records decode in a
 * fraction of the time (and none of the garbage) of a generic decoder.
 * The rules and the skip reasons are those of the contract, in its order.
 */

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
// The snapshot's record keys: those of the field table, then the services list; each found by name, whatever the table's order.
const SNAPSHOT_KEYS: readonly string[] = [...FIELD_TABLE.map((f) => f.snapshotKey), 'services'];
const KEYS = SNAPSHOT_KEYS.map(enc);
const [K_IP, K_PORT, K_IP_OUT, K_TYPE, K_ANON, K_PING, K_CHECKED, K_COUNTRY, K_CITY, K_WORKS, K_SERVICES, K_ASN, K_ORG, K_HOSTING, K_MOBILE] =
  ['ip', 'port', 'ip_out', 'type', 'anon', 'ping_ms', 'checked_at', 'country', 'city', 'works', 'services', 'asn', 'org', 'hosting', 'mobile'].map((k) => SNAPSHOT_KEYS.indexOf(k));
const TYPE_NAMES = ['http', 'https', 'socks4', 'socks5'].map(enc);
const ANON_NAMES = ['transparent', 'anonymous', 'elite'].map(enc);
const RU = enc('ru');
const EN = enc('en');

/** Field states: absent, present and well-typed, present but wrong. */
const ABSENT = 0;
const OK = 1;
const BAD = 2;

function sameBytes(b: Uint8Array, start: number, len: number, word: Uint8Array): boolean {
  if (len !== word.length) return false;
  for (let i = 0; i < len; i++) if (b[start + i] !== word[i]) return false;
  return true;
}

/** Record keys by length and first byte, so a key is compared with one candidate at most. */
const KEY_BY_SHAPE = new Int8Array(32 * 256).fill(-1);
KEYS.forEach((k, i) => (KEY_BY_SHAPE[k.length * 256 + k[0]] = i));

function keyId(b: Uint8Array, start: number, len: number): number {
  if (len === 0 || len >= 32) return -1;
  const id = KEY_BY_SHAPE[len * 256 + b[start]];
  return id >= 0 && sameBytes(b, start, len, KEYS[id]) ? id : -1;
}

function indexOfBytes(b: Uint8Array, start: number, len: number, words: readonly Uint8Array[]): number {
  for (let w = 0; w < words.length; w++) if (sameBytes(b, start, len, words[w])) return w;
  return -1;
}

export class RecordDecoder {
  /** Why the last record is skipped, or null when it is valid. */
  problem: string | null = null;
  ip = 0;
  port = 0;
  /** -1 when absent or IPv6. */
  ipOut = -1;
  /** Whether ip and ip_out are IPv6 addresses: their groups are then in ipGroups and ipOutGroups, until the next record. */
  ipV6 = false;
  ipOutV6 = false;
  readonly ipGroups = new Uint16Array(8);
  readonly ipOutGroups = new Uint16Array(8);
  type = 0;
  anon = 0;
  ping = 0;
  checkedAt = 0;
  /** Upper-case letters as two char codes: c1 * 256 + c2. */
  country = 0;
  /** Byte range of the whole `city` value (its dictionary key), and of each name; start -1 when absent. */
  cityStart = -1;
  cityEnd = -1;
  ruStart = -1;
  ruEnd = -1;
  enStart = -1;
  enEnd = -1;
  works = 0;
  services = 0;
  /** The exit's AS number, 0 when absent; the byte range of its organisation, start -1 when absent. */
  asn = 0;
  orgStart = -1;
  orgEnd = -1;
  /** The exit's network flags: -1 absent, else 0 or 1. */
  hosting = -1;
  mobile = -1;

  private p = 0;
  private readonly serviceNames: Uint8Array[];

  constructor(services: readonly string[]) {
    this.serviceNames = services.map(enc);
  }

  private need(b: Uint8Array, bytes: number): void {
    if (this.p + bytes > b.length) throw new Truncated();
  }

  /** A number of any MessagePack numeric type, or NaN (and the value skipped) if it is not one. */
  private number(b: Uint8Array): number {
    this.need(b, 1);
    const t = b[this.p];
    if (t <= 0x7f) { this.p++; return t; }
    if (t >= 0xe0) { this.p++; return t - 256; }
    let v: number;
    const at = this.p + 1;
    switch (t) {
      case 0xcc: this.need(b, 2); v = b[at]; this.p += 2; return v;
      case 0xcd: this.need(b, 3); v = b[at] * 256 + b[at + 1]; this.p += 3; return v;
      case 0xce: this.need(b, 5); v = ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0; this.p += 5; return v;
      case 0xcf: this.need(b, 9); v = (((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0) * 4294967296 + (((b[at + 4] << 24) | (b[at + 5] << 16) | (b[at + 6] << 8) | b[at + 7]) >>> 0); this.p += 9; return v;
      case 0xd0: this.need(b, 2); v = (b[at] << 24) >> 24; this.p += 2; return v;
      case 0xd1: this.need(b, 3); v = ((b[at] << 24) >> 16) | b[at + 1]; this.p += 3; return v;
      case 0xd2: this.need(b, 5); v = (b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]; this.p += 5; return v;
      case 0xd3: this.need(b, 9); v = ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) * 4294967296 + (((b[at + 4] << 24) | (b[at + 5] << 16) | (b[at + 6] << 8) | b[at + 7]) >>> 0); this.p += 9; return v;
      case 0xca: this.need(b, 5); v = new DataView(b.buffer, b.byteOffset + at, 4).getFloat32(0); this.p += 5; return v;
      case 0xcb: this.need(b, 9); v = new DataView(b.buffer, b.byteOffset + at, 8).getFloat64(0); this.p += 9; return v;
      default: this.p = skipValue(b, this.p); return NaN;
    }
  }

  /** The length of a string at p (p moved to its first byte), or -1 (and the value skipped) if it is not one. */
  private string(b: Uint8Array): number {
    this.need(b, 1);
    const t = b[this.p];
    let len: number;
    if (t >= 0xa0 && t <= 0xbf) { len = t & 0x1f; this.p += 1; }
    else if (t === 0xd9) { this.need(b, 2); len = b[this.p + 1]; this.p += 2; }
    else if (t === 0xda) { this.need(b, 3); len = b[this.p + 1] * 256 + b[this.p + 2]; this.p += 3; }
    else if (t === 0xdb) { this.need(b, 5); len = ((b[this.p + 1] << 24) | (b[this.p + 2] << 16) | (b[this.p + 3] << 8) | b[this.p + 4]) >>> 0; this.p += 5; }
    else { this.p = skipValue(b, this.p); return -1; }
    this.need(b, len);
    return len;
  }

  /** Entries of a map (or items of an array) at p, p moved past the header; -1 if it is neither. */
  private container(b: Uint8Array, fix: number, wide16: number): number {
    this.need(b, 1);
    const t = b[this.p];
    if ((t & 0xf0) === fix) { this.p += 1; return t & 0x0f; }
    if (t === wide16) { this.need(b, 3); const n = b[this.p + 1] * 256 + b[this.p + 2]; this.p += 3; return n; }
    if (t === wide16 + 1) { this.need(b, 5); const n = ((b[this.p + 1] << 24) | (b[this.p + 2] << 16) | (b[this.p + 3] << 8) | b[this.p + 4]) >>> 0; this.p += 5; return n; }
    return -1;
  }

  /** nil, or msgpackr's encoding of `undefined` (fixext 1, type 0, data 0): both mean absent. */
  private isNil(b: Uint8Array): boolean {
    this.need(b, 1);
    if (b[this.p] === 0xc0) {
      this.p++;
      return true;
    }
    if (b[this.p] === 0xd4 && this.p + 2 < b.length && b[this.p + 1] === 0 && b[this.p + 2] === 0) {
      this.p += 3;
      return true;
    }
    return false;
  }

  /** A boolean as 0 or 1, or -1 (and the value skipped) if it is not one. */
  private boolean(b: Uint8Array): number {
    this.need(b, 1);
    const t = b[this.p];
    if (t === 0xc2 || t === 0xc3) {
      this.p++;
      return t - 0xc2;
    }
    this.p = skipValue(b, this.p);
    return -1;
  }

  private ipv4(b: Uint8Array, len: number): number {
    const start = this.p;
    this.p += len;
    return parseIPv4Bytes(b, start, len);
  }

  /** An IPv4 address as its number (an IPv4-mapped IPv6 one too); an IPv6 one as -2, its groups in `groups`; else -1. */
  private address(b: Uint8Array, len: number, groups: Uint16Array): number {
    const v4 = this.ipv4(b, len);
    if (v4 >= 0) return v4;
    if (!parseIPv6Bytes(b, this.p - len, len, groups)) return -1;
    const mapped = mappedIPv4(groups);
    return mapped >= 0 ? mapped : -2;
  }

  /** Reads the record at pos; returns the position after it. `problem` says whether it is valid. */
  read(b: Uint8Array, pos: number): number {
    this.p = pos;
    let ip = ABSENT, port = NaN, ipOut = ABSENT, type = ABSENT, anon = ABSENT, ping = NaN, checked = NaN, country = ABSENT, city = ABSENT, works = NaN, services = ABSENT;
    let hasPort = false, hasPing = false, hasChecked = false, hasWorks = false;
    let hasAsn = false, asn = 0, org = ABSENT, hosting = ABSENT, mobile = ABSENT;
    let unknownService = '';
    this.ipOut = -1;
    this.ipOutV6 = false;
    this.ipV6 = false;
    this.cityStart = this.ruStart = this.enStart = -1;
    this.services = 0;
    this.asn = 0;
    this.orgStart = this.hosting = this.mobile = -1;
    const entries = this.container(b, 0x80, 0xde);
    if (entries < 0) {
      this.p = skipValue(b, pos);
      this.problem = 'record is not a map';
      return this.p;
    }
    for (let e = 0; e < entries; e++) {
      const keyLen = this.string(b);
      let field = -1;
      if (keyLen >= 0) {
        field = keyId(b, this.p, keyLen);
        this.p += keyLen;
      }
      switch (field) {
        case K_IP: {
          const len = this.string(b);
          const v = len < 0 ? -1 : this.address(b, len, this.ipGroups);
          ip = v === -1 ? BAD : OK;
          this.ip = v < 0 ? 0 : v;
          this.ipV6 = v === -2;
          break;
        }
        case K_PORT: hasPort = true; port = this.number(b); break;
        case K_IP_OUT: {
          if (this.isNil(b)) { ipOut = ABSENT; this.ipOut = -1; this.ipOutV6 = false; break; }
          const len = this.string(b);
          const v = len < 0 ? -1 : this.address(b, len, this.ipOutGroups);
          ipOut = v === -1 ? BAD : OK;
          this.ipOut = v < 0 ? -1 : v;
          this.ipOutV6 = v === -2;
          break;
        }
        case K_TYPE:
        case K_ANON: {
          const len = this.string(b);
          const i = len < 0 ? -1 : indexOfBytes(b, this.p, len, field === K_TYPE ? TYPE_NAMES : ANON_NAMES);
          if (len >= 0) this.p += len;
          if (field === K_TYPE) { type = i < 0 ? BAD : OK; this.type = i; }
          else { anon = i < 0 ? BAD : OK; this.anon = i; }
          break;
        }
        case K_PING: hasPing = true; ping = this.number(b); break;
        case K_CHECKED: hasChecked = true; checked = this.number(b); break;
        case K_COUNTRY: {
          const len = this.string(b);
          country = BAD;
          if (len === 2) {
            const c1 = b[this.p] & 0xdf; // ASCII upper case
            const c2 = b[this.p + 1] & 0xdf;
            const letters = (b[this.p] | 0x20) >= 97 && (b[this.p] | 0x20) <= 122 && (b[this.p + 1] | 0x20) >= 97 && (b[this.p + 1] | 0x20) <= 122;
            if (letters) { country = OK; this.country = c1 * 256 + c2; }
          }
          if (len >= 0) this.p += len;
          break;
        }
        case K_CITY: city = this.city(b); break;
        case K_WORKS: hasWorks = true; works = this.number(b); break;
        case K_SERVICES: {
          if (this.isNil(b)) { services = ABSENT; this.services = 0; break; }
          const items = this.container(b, 0x90, 0xdc);
          if (items < 0) { this.p = skipValue(b, this.p); services = BAD; unknownService = ''; break; }
          services = OK;
          let mask = 0;
          for (let i = 0; i < items; i++) {
            const len = this.string(b);
            const s = len < 0 ? -1 : indexOfBytes(b, this.p, len, this.serviceNames);
            if (s < 0 && services === OK) {
              services = BAD;
              unknownService = len < 0 ? '(not a string)' : Buffer.from(b.buffer, b.byteOffset + this.p, len).toString('utf8');
            }
            if (len >= 0) this.p += len;
            if (s >= 0) mask |= 1 << s;
          }
          this.services = mask >>> 0;
          break;
        }
        case K_ASN: hasAsn = !this.isNil(b); if (hasAsn) asn = this.number(b); break;
        case K_ORG: {
          if (this.isNil(b)) { org = ABSENT; this.orgStart = -1; break; }
          const len = this.string(b);
          org = len < 0 || len > MAX_STRING_BYTES ? BAD : OK;
          this.orgStart = len < 0 ? -1 : this.p;
          this.orgEnd = this.p + Math.max(0, len);
          this.orgLong = len > MAX_STRING_BYTES;
          if (len >= 0) this.p += len;
          break;
        }
        case K_HOSTING:
        case K_MOBILE: {
          const nil = this.isNil(b);
          const v = nil ? -1 : this.boolean(b);
          const state = nil ? ABSENT : v >= 0 ? OK : BAD;
          if (field === K_HOSTING) { hosting = state; this.hosting = v; }
          else { mobile = state; this.mobile = v; }
          break;
        }
        default:
          this.p = skipValue(b, this.p); // an unknown key's value
      }
    }
    this.port = port;
    this.ping = Math.round(ping);
    this.checkedAt = checked;
    this.works = works;
    this.problem =
      ip !== OK ? 'ip is not an IPv4 or IPv6 address'
      : !hasPort || !(Number.isInteger(port) && port >= 1 && port <= 65535) ? 'port is not an integer in 1..65535'
      : ipOut === BAD ? 'ip_out is not an IPv4 or IPv6 address'
      : type !== OK ? 'type is not one of http, https, socks4, socks5'
      : anon !== OK ? 'anon is not one of transparent, anonymous, elite'
      : !hasPing || !(Number.isFinite(ping) && ping >= 0) ? 'ping_ms is not a finite number >= 0'
      : !hasChecked || !(Number.isInteger(checked) && checked >= 0 && checked <= 0xffffffff) ? 'checked_at is not an integer unix time'
      : country !== OK ? 'country is not two letters'
      : city === BAD ? this.cityProblem
      : !hasWorks || !(Number.isInteger(works) && works >= 0 && works <= 100) ? 'works is not an integer in 0..100'
      : services === BAD ? (unknownService === '' ? 'services is not an array' : `services names an unknown service ${JSON.stringify(unknownService).slice(0, 70)}`)
      : hasAsn && !(Number.isInteger(asn) && asn >= 1 && asn <= MAX_ASN) ? `asn is not an integer in 1..${MAX_ASN}`
      : org === BAD ? (this.orgLong ? `org is longer than ${MAX_STRING_BYTES} bytes` : 'org is not a string')
      : hosting === BAD ? 'hosting is not a boolean'
      : mobile === BAD ? 'mobile is not a boolean'
      : null;
    this.asn = hasAsn ? asn : 0;
    return this.p;
  }

  private cityProblem = '';
  private orgLong = false;

  private city(b: Uint8Array): number {
    const start = this.p;
    if (this.isNil(b)) return ABSENT;
    const entries = this.container(b, 0x80, 0xde);
    if (entries < 0) {
      this.p = skipValue(b, this.p);
      this.cityProblem = 'city is not a map';
      return BAD;
    }
    let state = OK;
    this.ruStart = this.enStart = -1;
    for (let e = 0; e < entries; e++) {
      const keyLen = this.string(b);
      const lang = keyLen < 0 ? -1 : sameBytes(b, this.p, keyLen, RU) ? 0 : sameBytes(b, this.p, keyLen, EN) ? 1 : -1;
      if (keyLen >= 0) this.p += keyLen;
      if (lang < 0) { this.p = skipValue(b, this.p); continue; }
      if (this.isNil(b)) {
        if (lang === 0) this.ruStart = -1; else this.enStart = -1;
        continue;
      }
      const len = this.string(b);
      if (len < 0) {
        if (state === OK) this.cityProblem = lang === 0 ? 'city.ru is not a string' : 'city.en is not a string';
        state = BAD;
        continue;
      }
      if (len > MAX_STRING_BYTES) {
        if (state === OK) this.cityProblem = `city.${lang === 0 ? 'ru' : 'en'} is longer than ${MAX_STRING_BYTES} bytes`;
        state = BAD;
        this.p += len;
        continue;
      }
      if (lang === 0) { this.ruStart = this.p; this.ruEnd = this.p + len; }
      else { this.enStart = this.p; this.enEnd = this.p + len; }
      this.p += len;
    }
    this.cityStart = start;
    this.cityEnd = this.p;
    return state;
  }
}
