/**
 * The reference's own reading of the snapshot contract (docs/snapshot.md) on decoded objects, written
 * independently of the service's byte-level decoder, so each checks the other.
 */
import { isIPv6 } from 'node:net';
import { ANONS, TYPES } from '../../src/core/vocabulary.js';

const IPV4 = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;
const isIPv4 = (v: unknown): boolean => typeof v === 'string' && IPV4.test(v) && v.split('.').every((o) => Number(o) <= 255);
/** Any RFC 4291 text form; node:net also takes a zone (`%eth0`), which the contract does not. */
const isAddress = (v: unknown): boolean => isIPv4(v) || (typeof v === 'string' && !v.includes('%') && isIPv6(v));
const isInt = (v: unknown, min: number, max: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isAbsent = (v: unknown): boolean => v === undefined || v === null;
const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** null when the record is valid, else the reason it is skipped. */
export function recordProblem(r: unknown, services: readonly string[]): string | null {
  if (!isMap(r)) return 'record is not a map';
  if (!isAddress(r.ip)) return 'ip is not an IPv4 or IPv6 address';
  if (!isInt(r.port, 1, 65535)) return 'port is not an integer in 1..65535';
  if (!isAbsent(r.ip_out) && !isAddress(r.ip_out)) return 'ip_out is not an IPv4 or IPv6 address';
  if (!(TYPES as readonly unknown[]).includes(r.type)) return 'type is not one of http, https, socks4, socks5';
  if (!(ANONS as readonly unknown[]).includes(r.anon)) return 'anon is not one of transparent, anonymous, elite';
  if (typeof r.ping_ms !== 'number' || !Number.isFinite(r.ping_ms) || r.ping_ms < 0) return 'ping_ms is not a finite number >= 0';
  if (!isInt(r.checked_at, 0, 0xffffffff)) return 'checked_at is not an integer unix time';
  if (typeof r.country !== 'string' || !/^[A-Za-z]{2}$/.test(r.country)) return 'country is not two letters';
  if (!isAbsent(r.city)) {
    if (!isMap(r.city)) return 'city is not a map';
    if (!isAbsent(r.city.ru) && typeof r.city.ru !== 'string') return 'city.ru is not a string';
    if (typeof r.city.ru === 'string' && Buffer.byteLength(r.city.ru) > 256) return 'city.ru is longer than 256 bytes';
    if (!isAbsent(r.city.en) && typeof r.city.en !== 'string') return 'city.en is not a string';
    if (typeof r.city.en === 'string' && Buffer.byteLength(r.city.en) > 256) return 'city.en is longer than 256 bytes';
  }
  if (!isInt(r.works, 0, 100)) return 'works is not an integer in 0..100';
  if (!isAbsent(r.services)) {
    if (!Array.isArray(r.services)) return 'services is not an array';
    const unknown = r.services.find((s) => typeof s !== 'string' || !services.includes(s));
    if (unknown !== undefined) return `services names an unknown service ${JSON.stringify(typeof unknown === 'string' ? unknown : '(not a string)').slice(0, 70)}`;
  }
  if (!isAbsent(r.asn) && !isInt(r.asn, 1, 4294967295)) return 'asn is not an integer in 1..4294967295';
  if (!isAbsent(r.org) && typeof r.org !== 'string') return 'org is not a string';
  if (typeof r.org === 'string' && Buffer.byteLength(r.org) > 256) return 'org is longer than 256 bytes';
  for (const flag of ['hosting', 'mobile']) if (!isAbsent(r[flag]) && typeof r[flag] !== 'boolean') return `${flag} is not a boolean`;
  return null;
}
