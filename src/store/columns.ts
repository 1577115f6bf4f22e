import type { BitsetFamily } from './bitset.js';

/** The longest `ip:port\n`: `255.255.255.255:65535\n`. */
export const MAX_LINE_BYTES = 22;

/**
 * Byte columns (lines, ping texts, timecheck, city JSON) end with this
 * many zero bytes after their last item: renderers copy whole words from an
 * item's start without checking how far the last word reaches.
 */
export const READ_SLACK = 64;

/** A record's identity as one number: ip, port and type, ordered as byAddress orders rows. */
export const packKey = (ip: number, port: number, type: number): number => ip * 262144 + port * 4 + type;
export const keyIp = (key: number): number => Math.floor(key / 262144);
export const keyPort = (key: number): number => Math.floor(key / 4) % 65536;
export const keyType = (key: number): number => key % 4;

/** Variable-length byte strings, one per item: item i is bytes[off[i] .. off[i+1]). */
export interface ByteStrings {
  bytes: Uint8Array;
  off: Uint32Array;
}

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
  /** The address rows are answered from: an IPv4 address as its number, an IPv6 one as its index in `exitV6Text`. */
  ipOut: Uint32Array;
  /** The rows whose ip_out is IPv6 (one bitset). */
  exitV6Bits: BitsetFamily;
  /** The IPv6 exits' texts (RFC 5952), which `ipOut` indexes for those rows. */
  exitV6Text: ByteStrings;
  country: Uint16Array;
  city: Uint32Array;
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
  /** JSON string literals (quoted, escaped) of each city's name per language. */
  cityJsonRu: ByteStrings;
  cityJsonEn: ByteStrings;
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
  skipped: number;
  duplicates: number;
  /** Longest ping text, bounding a row's rendered size. */
  maxPingText: number;
  /** The first few records skipped, each with its number and reason. */
  skipReasons: string[];
  /** Records skipped for each reason (docs/snapshot.md). */
  skipCounts: Record<string, number>;
  /** Rows whose ip_out is an IPv6 address. */
  ipv6Exits: number;
}

/** The buffers a store's columns are views of: shared memory every one (store/arena.ts), so that serving threads read them where they are. */
export function columnBuffers(c: StoreColumns): ArrayBufferLike[] {
  const views: ArrayBufferView[] = [
    c.ip, c.port, c.type, c.anon, c.works, c.pingRank, c.pingValues, c.timeRank, c.times, c.ipOut, c.country, c.city, c.services,
    c.addrId, c.byAddress, c.addrPrint, c.addrKey, c.byPing, c.byWorks, c.lines.bytes, c.lines.off, c.ipLen, c.pingText.bytes, c.pingText.off, c.timecheck,
    c.typeBits.data, c.anonBits.data, c.countryBits.data, c.serviceBits.data, c.exitV6Bits.data, c.exitV6Text.bytes, c.exitV6Text.off, c.cityStart, c.cityRows,
    c.cityJsonRu.bytes, c.cityJsonRu.off, c.cityJsonEn.bytes, c.cityJsonEn.off,
  ];
  return [...new Set(views.map((v) => v.buffer))];
}
