import type { BitsetFamily } from './bitset.js';

/** The longest `ip:port\n` of an IPv4 record, `255.255.255.255:65535\n`, and of an IPv6 one, `[` 39 characters `]:65535\n`. */
export const MAX_LINE_BYTES = 22;
export const MAX_V6_LINE_BYTES = 48;

/**
 * Byte columns (lines, ping texts, timecheck, city JSON) end with this
 * many zero bytes after their last item: renderers copy whole words from an
 * item's start without checking how far the last word reaches.
 */
export const READ_SLACK = 64;

/** `ipOut` of a row marked in `exitV6Bits` that leaves from its own IPv6 entry. */
export const EXIT_IS_ENTRY = 0xffffffff;

/** The keys of IPv6 records start here: every IPv4 key is below. */
export const V6_KEYS = 2 ** 50;

/**
 * A record's identity as one number: ip, port and type, ordered as
 * byAddress orders rows. An IPv4 record's ip is its address; an IPv6
 * record's is the index of its address in an address table (see
 * compareKeys), which is the store's `v6Entries` for its own keys, and a
 * log's or batch's own for the keys the history keeps.
 */
export const packKey = (ip: number, port: number, type: number, v6 = false): number => (v6 ? V6_KEYS : 0) + ip * 262144 + port * 4 + type;
export const isV6Key = (key: number): boolean => key >= V6_KEYS;
export const keyIp = (key: number): number => Math.floor((key % V6_KEYS) / 262144);
export const keyPort = (key: number): number => Math.floor(key / 4) % 65536;
export const keyType = (key: number): number => key % 4;

/**
 * IPv6 addresses, 4 words each, most significant first, ascending: the
 * address of index i is words 4i .. 4i + 3.
 */
export type AddressTable = Uint32Array;

/** The order of address i of `a` and address j of `b`, as 128-bit numbers: negative, 0 or positive. */
export function compareAddresses(a: AddressTable, i: number, b: AddressTable, j: number): number {
  for (let w = 0; w < 4; w++) {
    const d = a[i * 4 + w] - b[j * 4 + w];
    if (d !== 0) return d;
  }
  return 0;
}

/** The order of two keys, each with the table its IPv6 address is in: IPv4 first, then by address, port and type. */
export function compareKeys(a: number, tableA: AddressTable, b: number, tableB: AddressTable): number {
  if (a < V6_KEYS || b < V6_KEYS) return a - b;
  return compareAddresses(tableA, keyIp(a), tableB, keyIp(b)) || (a % 262144) - (b % 262144);
}

/** The index of `address` (4 words) in `table`, or -1. */
export function addressIndex(table: AddressTable, address: Uint32Array): number {
  let lo = 0;
  let hi = table.length / 4;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const d = compareAddresses(table, mid, address, 0);
    if (d === 0) return mid;
    if (d < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** Who runs an exit (docs/snapshot.md): its AS number (0: unknown) and its organisation ('' unknown). */
export interface Network {
  asn: number;
  org: string;
}

/** Bits of `netFlags`: whether the exit's `hosting` and `mobile` flags are known, and their values. */
export const HOSTING_KNOWN = 1;
export const HOSTING = 2;
export const MOBILE_KNOWN = 4;
export const MOBILE = 8;
/** The AS number came from the IP-to-ASN database, not the checker. */
export const ASN_FROM_DATABASE = 16;

/** Variable-length byte strings, one per item: item i is bytes[off[i] .. off[i+1]). */
export interface ByteStrings {
  bytes: Uint8Array;
  off: Uint32Array;
}

/** A row's exit network id (an index into StoreMeta.networks), in the narrowest column the snapshot's ids fit. */
export type NetworkColumn = Uint8Array | Uint16Array | Uint32Array;

/**
 * Everything the worker builds, as typed arrays that transfer to the main
 * thread without copying. Rows are in output order (freshest first).
 */
export interface StoreColumns {
  rows: number;
  ip: Uint32Array;
  port: Uint16Array;
  type: Uint8Array;
  anon: Uint8Array;
  works: Uint8Array;
  /** Rank of the row's ping among `pingValues`: the ping filter and order compare ranks (16 bits when they fit). */
  pingRank: Uint16Array | Uint32Array;
  /** The distinct pings in whole milliseconds, ascending (Float64: the contract bounds ping_ms only below). */
  pingValues: Float64Array;
  /** Rank of the row's checked_at among `times`; rows are in rank order (16 bits when they fit). */
  timeRank: Uint16Array | Uint32Array;
  /** The distinct checked_at values, descending. */
  times: Uint32Array;
  /** The IPv6 entry addresses, ascending: an IPv6 row's `ip` is the index of its address here. */
  v6Entries: AddressTable;
  /** The rows of each family: member 0 IPv4, member 1 IPv6 (the `ipv` filter). */
  ipvBits: BitsetFamily;
  /**
   * The address rows are answered from: an IPv4 address as its number, an
   * IPv6 one as its index in `exitV6Text`, or EXIT_IS_ENTRY where it is the
   * row's own IPv6 entry (whose text the row's line has).
   */
  ipOut: Uint32Array;
  /** The rows whose ip_out is IPv6 (one bitset). */
  exitV6Bits: BitsetFamily;
  /** The IPv6 exits' texts (RFC 5952), which `ipOut` indexes for those rows. */
  exitV6Text: ByteStrings;
  country: Uint16Array;
  city: Uint32Array;
  /** The exit's network, by id in `StoreMeta.networks` (0: unknown). */
  network: NetworkColumn;
  /** The exit's hosting and mobile flags (HOSTING_KNOWN and the others). */
  netFlags: Uint8Array;
  /** Bit i = compatible with service i (at most 32 services), in the narrowest of 8, 16 or 32 bits the snapshot's services fit. */
  services: Uint8Array | Uint16Array | Uint32Array;
  /** Same id for the rows of one ip:port (format=object keeps the first). */
  addrId: Uint32Array;
  addrCount: number;
  /** Row ids ordered by ip, port, type: the `ip` filter binary-searches it. */
  byAddress: Uint32Array;
  /** Per position of byAddress, two 32-bit hashes of the record's shown values: the history compares them (store/history.ts). */
  addrPrint: Uint32Array;
  /** Per position of byAddress, its key (see packKey), which change sets search. */
  addrKey: Float64Array;
  /** Rows by ping ascending, and by works descending; ties in row order (docs/api.md, Parameters). */
  byPing: Uint32Array;
  byWorks: Uint32Array;
  /** `ip:port\n` per row, contiguous in row order, so a run of rows is one copy. */
  lines: ByteStrings;
  /** Bytes of the `ip` part at the start of each line. */
  ipLen: Uint8Array;
  /** The JSON of each of `pingValues` (seconds), by rank. */
  pingText: ByteStrings;
  /** 19 bytes for each of `times`, by rank: `YYYY-MM-DD HH:MM:SS` in UTC+02:00. */
  timecheck: Uint8Array;
  typeBits: BitsetFamily;
  anonBits: BitsetFamily;
  countryBits: BitsetFamily;
  serviceBits: BitsetFamily;
  /** Rows of city id c: cityRows[cityStart[c] .. cityStart[c+1]), ascending. */
  cityStart: Uint32Array;
  cityRows: Uint32Array;
  /** Rows of network id k: networkRows[networkStart[k] .. networkStart[k+1]), ascending. */
  networkStart: Uint32Array;
  networkRows: Uint32Array;
  /** Per network id, the JSON of its AS number (`null` for unknown) and of its organisation (a string literal). */
  networkAsnJson: ByteStrings;
  networkOrgJson: ByteStrings;
  /** Rows whose exit's flag is known: member 0 false, member 1 true. */
  hostingBits: BitsetFamily;
  mobileBits: BitsetFamily;
  /** JSON string literals (quoted, escaped) of each city's name per language. */
  cityJsonRu: ByteStrings;
  cityJsonEn: ByteStrings;
  /** The same as CSV fields (an unknown AS number empty; texts quoted only where CSV needs it). */
  networkAsnCsv: ByteStrings;
  networkOrgCsv: ByteStrings;
  cityCsvRu: ByteStrings;
  cityCsvEn: ByteStrings;
}

/** The small, non-typed-array part of a build, cloned between threads. */
export interface StoreMeta {
  generatedAt: number;
  /** SHA-256 of the snapshot's bytes, base64url. */
  contentHash: string;
  services: string[];
  /** Country codes by id, upper case. */
  countries: string[];
  /** City names by id; id 0 is "no city". */
  cities: Array<{ ru: string; en: string }>;
  /** Exit networks by id; id 0 is unknown. */
  networks: Network[];
  /** The IP-to-ASN database the build looked exits up in, and the rows whose AS number it gave; null: none. */
  asnDatabase?: { name: string; date: string | null; filled: number } | null;
  skipped: number;
  duplicates: number;
  /** Longest ping text, bounding a row's rendered size. */
  maxPingText: number;
  /** The first few records skipped, each with its number and reason. */
  skipReasons: string[];
  /** Records skipped for each reason (docs/snapshot.md). */
  skipCounts: Record<string, number>;
  /** Rows whose ip_out is an IPv6 address, and whose ip is. */
  ipv6Exits: number;
  ipv6Entries: number;
  /** The longest `ip:port\n` of a row, and its longest `ip` (an IPv6 one bracketed), in bytes. */
  maxLineBytes: number;
  maxIpBytes: number;
}

/** Every column of a store, as the views of its bytes. */
export function columnViews(c: StoreColumns): ArrayBufferView[] {
  return [
    c.ip, c.port, c.type, c.anon, c.works, c.pingRank, c.pingValues, c.timeRank, c.times, c.ipOut, c.country, c.city, c.network, c.netFlags, c.services,
    c.addrId, c.byAddress, c.addrPrint, c.addrKey, c.byPing, c.byWorks, c.lines.bytes, c.lines.off, c.ipLen, c.pingText.bytes, c.pingText.off, c.timecheck,
    c.typeBits.data, c.anonBits.data, c.countryBits.data, c.serviceBits.data, c.exitV6Bits.data, c.exitV6Text.bytes, c.exitV6Text.off, c.v6Entries, c.ipvBits.data, c.cityStart, c.cityRows,
    c.networkStart, c.networkRows, c.hostingBits.data, c.mobileBits.data, c.networkAsnJson.bytes, c.networkAsnJson.off, c.networkOrgJson.bytes, c.networkOrgJson.off,
    c.cityJsonRu.bytes, c.cityJsonRu.off, c.cityJsonEn.bytes, c.cityJsonEn.off,
    c.networkAsnCsv.bytes, c.networkAsnCsv.off, c.networkOrgCsv.bytes, c.networkOrgCsv.off, c.cityCsvRu.bytes, c.cityCsvRu.off, c.cityCsvEn.bytes, c.cityCsvEn.off,
  ];
}

/** The buffers a store's columns are views of: shared memory every one (store/arena.ts), so that serving threads read them where they are. */
export function columnBuffers(c: StoreColumns): ArrayBufferLike[] {
  return [...new Set(columnViews(c).map((v) => v.buffer))];
}
