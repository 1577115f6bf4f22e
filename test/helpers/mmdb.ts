import { parseIPv6 } from '../../src/core/ipv6.js';

/**
 * Writes a small database in MaxMind DB format (version 2.0, IPv6 tree,
 * 24-bit records), as an operator's GeoLite2-ASN or DB-IP ASN Lite file is
 * laid out, so tests give --asn-db a real file: no such database is
 * published in a package. IPv4 networks sit at ::a.b.c.d, where readers
 * look them up. Networks must not overlap.
 */
export interface MmdbNetwork {
  /** `a.b.c.d/n` or an IPv6 `prefix/n`. */
  cidr: string;
  /** The record: numbers are written as uint32, strings as UTF-8. */
  record: Record<string, number | string>;
}

/** The bits of a network's prefix, IPv4 ones behind 96 zero bits. */
function prefixBits(cidr: string): number[] {
  const [address, length] = cidr.split('/');
  const n = Number(length);
  const bits: number[] = [];
  if (address.includes(':')) {
    const groups = parseIPv6(address);
    if (!groups) throw new Error(`not an IPv6 address: ${address}`);
    for (const g of groups) for (let b = 15; b >= 0; b--) bits.push((g >> b) & 1);
    return bits.slice(0, n);
  }
  for (let i = 0; i < 96; i++) bits.push(0);
  for (const octet of address.split('.').map(Number)) for (let b = 7; b >= 0; b--) bits.push((octet >> b) & 1);
  return bits.slice(0, 96 + n);
}

/** The control bytes of a field of `type` and `size` (extended types after a zero type). */
function control(type: number, size: number): number[] {
  const head: number[] = [];
  let first: number;
  if (size < 29) first = size;
  else if (size < 285) {
    first = 29;
    head.push(size - 29);
  } else {
    first = 30;
    head.push((size - 285) >> 8, (size - 285) & 255);
  }
  return type <= 7 ? [(type << 5) | first, ...head] : [first, type - 7, ...head];
}

const uint = (type: number, v: number | bigint): number[] => {
  const bytes: number[] = [];
  for (let x = BigInt(v); x > 0n; x >>= 8n) bytes.unshift(Number(x & 255n));
  return [...control(type, bytes.length), ...bytes];
};
const text = (s: string): number[] => {
  const b = [...Buffer.from(s, 'utf8')];
  return [...control(2, b.length), ...b];
};
/** A map of encoded values. */
const map = (entries: Array<[string, number[]]>): number[] => [...control(7, entries.length), ...entries.flatMap(([k, v]) => [...text(k), ...v])];
const recordBytes = (r: MmdbNetwork['record']): number[] => map(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' ? uint(6, v) : text(v)]));

export function writeMmdb(networks: readonly MmdbNetwork[], o: { databaseType?: string; buildEpochS?: number } = {}): Buffer {
  // The data section: each record once.
  const data: number[] = [];
  const offsets = networks.map((n) => {
    const at = data.length;
    data.push(...recordBytes(n.record));
    return at;
  });
  // The tree: per node its two records, a node's index, 'empty', or a data offset.
  type Slot = { node: number } | { data: number } | null;
  const nodes: Array<[Slot, Slot]> = [[null, null]];
  networks.forEach((n, k) => {
    const bits = prefixBits(n.cidr);
    let at = 0;
    bits.forEach((bit, depth) => {
      const slot = nodes[at][bit];
      if (depth === bits.length - 1) {
        if (slot !== null) throw new Error(`${n.cidr} overlaps another network`);
        nodes[at][bit] = { data: offsets[k] };
      } else if (slot === null) {
        nodes.push([null, null]);
        nodes[at][bit] = { node: nodes.length - 1 };
        at = nodes.length - 1;
      } else if ('node' in slot) at = slot.node;
      else throw new Error(`${n.cidr} lies inside another network`);
    });
  });
  const count = nodes.length;
  const record = (s: Slot): number => (s === null ? count : 'node' in s ? s.node : count + 16 + s.data);
  const tree = Buffer.alloc(count * 6);
  nodes.forEach(([left, right], i) => {
    tree.writeUIntBE(record(left), i * 6, 3);
    tree.writeUIntBE(record(right), i * 6 + 3, 3);
  });
  const metadata = map([
    ['node_count', uint(6, count)],
    ['record_size', uint(5, 24)],
    ['ip_version', uint(5, 6)],
    ['database_type', text(o.databaseType ?? 'GeoLite2-ASN')],
    ['languages', [...control(11, 1), ...text('en')]],
    ['binary_format_major_version', uint(5, 2)],
    ['binary_format_minor_version', uint(5, 0)],
    ['build_epoch', uint(9, o.buildEpochS ?? 1_780_000_000)],
    ['description', map([['en', text('a test database')]])],
  ]);
  return Buffer.concat([tree, Buffer.alloc(16), Buffer.from(data), Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com'), Buffer.from(metadata)]);
}
