import { mappedIPv4, parseIPv6 } from '../core/ipv6.js';
import { parseIPv4 } from '../core/vocabulary.js';

/**
 * Client addresses as numbers: an IPv4 address is its uint32; an IPv6 address
 * is kept as 8 16-bit groups. IPv4-mapped IPv6 (::ffff:a.b.c.d, which a
 * dual-stack listener reports for IPv4 peers) counts as IPv4.
 */
export type Address = { v4: number } | { v6: number[] };

/** Parses IPv4 or IPv6 text (full or `::`-compressed, with or without a trailing dotted quad); null if neither. */
export function parseAddress(text: string): Address | null {
  const s = text.trim();
  const v4 = parseIPv4(s);
  if (v4 >= 0) return { v4 };
  const groups = parseIPv6(s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s);
  if (!groups) return null;
  const mapped = mappedIPv4(groups);
  return mapped >= 0 ? { v4: mapped } : { v6: groups };
}

/** A listening address only this host reaches: localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const a = parseAddress(host);
  if (!a) return false;
  return 'v4' in a ? a.v4 >>> 24 === 127 : a.v6.slice(0, 7).every((g) => g === 0) && a.v6[7] === 1;
}

/**
 * The subnet a request counts against, as one number: a.b.0.0/16 for IPv4
 * (0..65535), and the first 32 bits, offset past those, for IPv6.
 */
export function subnetOf(a: Address): number {
  return 'v4' in a ? a.v4 >>> 16 : 65536 + a.v6[0] * 65536 + a.v6[1];
}

export function formatSubnet(subnet: number): string {
  if (subnet < 65536) return `${subnet >>> 8}.${subnet & 255}.0.0/16`;
  const bits = subnet - 65536;
  return `${Math.floor(bits / 65536).toString(16)}:${(bits % 65536).toString(16)}::/32`;
}

/** A list of addresses and CIDR ranges (`--trust-proxy`). */
export class AddressSet {
  private readonly ranges: Array<{ base: Address; bits: number }> = [];

  constructor(items: readonly string[]) {
    for (const item of items) {
      const [host, len] = item.split('/');
      const base = parseAddress(host);
      if (!base) throw new Error(`not an IP address or CIDR range: "${item}"`);
      const max = 'v4' in base ? 32 : 128;
      const bits = len === undefined ? max : /^\d+$/.test(len) ? Number(len) : NaN;
      if (!(bits >= 0 && bits <= max)) throw new Error(`bad prefix length in "${item}"`);
      this.ranges.push({ base, bits });
    }
  }

  get size(): number {
    return this.ranges.length;
  }

  has(a: Address): boolean {
    return this.ranges.some(({ base, bits }) => {
      if ('v4' in base !== 'v4' in a) return false;
      if ('v4' in base && 'v4' in a) return bits === 0 || base.v4 >>> (32 - bits) === a.v4 >>> (32 - bits);
      const x = (base as { v6: number[] }).v6;
      const y = (a as { v6: number[] }).v6;
      for (let i = 0, left = bits; left > 0; i++, left -= 16) {
        const keep = Math.min(16, left);
        if (x[i] >>> (16 - keep) !== y[i] >>> (16 - keep)) return false;
      }
      return true;
    });
  }
}

/**
 * The client of a request: the TCP peer, unless the peer is a trusted proxy;
 * then the right-most `X-Forwarded-For` entry that is not itself trusted. An
 * entry that is not an address stops the walk: the peer is used.
 */
export function clientAddress(peer: Address, forwardedFor: string, trusted: AddressSet): Address {
  if (trusted.size === 0 || forwardedFor === '' || !trusted.has(peer)) return peer;
  const hops = forwardedFor.split(',');
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseAddress(hops[i]);
    if (!hop) return peer;
    client = hop;
    if (!trusted.has(hop)) return hop;
  }
  return client;
}
