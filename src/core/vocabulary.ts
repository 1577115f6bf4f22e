/**
 * The service's shared vocabulary: the enums (each code is its index, also
 * the output order of types), the record fields of the JSON output, the
 * default services, and IPv4 parsing. Every stage uses it; it imports
 * nothing of them.
 */
export const TYPES = ['http', 'https', 'socks4', 'socks5'] as const;
export const ANONS = ['transparent', 'anonymous', 'elite'] as const;
export const DEFAULT_SERVICES = ['smtp', 'telegram', 'avito', 'google', 'the service'];
/** Record keys of the JSON output, in canonical order; services follow them. */
export const RECORD_FIELDS = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works'] as const;

/** Dotted IPv4 in canonical form (no leading zeros, each octet 0..255) from bytes → uint32, or -1. */
export function parseIPv4Bytes(b: Uint8Array, start: number, len: number): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < start + len; i++) {
    const c = b[i];
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return -1;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

const ipScratch = new Uint8Array(15);

/** The same for text. */
export function parseIPv4(s: string): number {
  if (s.length > 15) return -1;
  for (let i = 0; i < s.length; i++) ipScratch[i] = Math.min(255, s.charCodeAt(i));
  return parseIPv4Bytes(ipScratch, 0, s.length);
}
