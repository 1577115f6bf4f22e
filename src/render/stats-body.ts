import type { StatsCounts } from '../query/stats-counts.js';
import { ANONS, TYPES } from '../core/vocabulary.js';

/**
 * The get=stats body, as `JSON.stringify(value, null, 2)` (pretty) or
 * `JSON.stringify(value)` writes it. Written from entry lists rather than
 * by stringifying an object, so that key order is the contract's whatever
 * the names.
 */
export function statsJson(s: StatsCounts, services: readonly string[], pretty: boolean): string {
  const named = (names: readonly string[], counts: readonly number[]): Array<[string, number]> => names.map((name, i) => [name, counts[i]]);
  const nl = pretty ? '\n' : '';
  const colon = pretty ? ': ' : ':';
  const object = (entries: ReadonlyArray<[string, number]>): string => {
    if (entries.length === 0) return '{}';
    const inner = entries.map(([k, v]) => `${pretty ? '    ' : ''}${JSON.stringify(k)}${colon}${v}`).join(`,${nl}`);
    return `{${nl}${inner}${nl}${pretty ? '  ' : ''}}`;
  };
  const top: Array<[string, string]> = [
    ['count', String(s.count)],
    ['type', object(named(TYPES, s.types))],
    ['anon', object(named(ANONS, s.anons))],
    ['country', object(s.countries)],
    ['service', object(named(services, s.services))],
    // An array of objects, as JSON.stringify writes it one level in.
    ['asn', pretty ? JSON.stringify(s.asns, null, 2).replace(/\n/g, '\n  ') : JSON.stringify(s.asns)],
  ];
  return `{${nl}${top.map(([k, v]) => `${pretty ? '  ' : ''}"${k}"${colon}${v}`).join(`,${nl}`)}${nl}}`;
}
