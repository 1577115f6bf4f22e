import { CodedError } from '../core/errors.js';
import { AsnLookup, readDefaultAsnTables, type ExitNetworks } from './asn-database.js';
import { MmdbNetworks } from './asn-mmdb.js';

/** Where exits the checker does not place are looked up (--asn-db): the default database, nowhere, or an operator's MaxMind DB file. */
export type AsnDbChoice = 'default' | 'none' | { file: string };

/**
 * The value of --asn-db (PROXYLIST_ASN_DB): absent for the default
 * database, `none`, or a file, read here once so that a missing or wrong
 * file stops the start with one line rather than failing every load.
 */
export function parseAsnDb(raw: string | undefined): AsnDbChoice {
  if (raw === undefined) return 'default';
  if (raw === 'none') return 'none';
  if (raw.trim() === '') throw new CodedError('E_USAGE', '--asn-db must be none or a MaxMind DB file (GeoLite2-ASN, DB-IP\'s ASN Lite), not empty');
  new MmdbNetworks(raw);
  return { file: raw };
}

/** The lookups of a choice, opened in this thread; null for none. */
export function openExitNetworks(choice: AsnDbChoice): ExitNetworks | null {
  if (choice === 'none') return null;
  return choice === 'default' ? new AsnLookup(readDefaultAsnTables()) : new MmdbNetworks(choice.file);
}
