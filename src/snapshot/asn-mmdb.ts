import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { Reader, type AsnResponse } from 'mmdb-lib';
import { CodedError, messageOf } from '../core/errors.js';
import { MAX_ASN } from '../core/vocabulary.js';
import type { ExitNetworks } from './asn-database.js';

/** What an ASN database in MaxMind DB format holds per network (GeoLite2-ASN, DB-IP's ASN Lite); a file may hold other types, which are checked. */
type AsnRecord = AsnResponse;

/**
 * An operator's IP-to-ASN database in MaxMind DB format (--asn-db FILE),
 * read by mmdb-lib on the build thread. Each distinct record is decoded
 * once (the reader caches it by its place in the file) and becomes a
 * network of its own here, so a load of a million exits decodes only the
 * networks it meets.
 */
export class MmdbNetworks implements ExitNetworks {
  readonly name: string;
  readonly date: string | null;
  private readonly reader: Reader<AsnRecord>;
  private readonly asns: number[] = [];
  private readonly orgs: string[] = [];
  /** A decoded record → its network; records the reader decoded once are the same objects. */
  private readonly ids = new Map<AsnRecord, number>();
  private readonly groups = new Array<string>(8);
  /** The file as it was read. */
  private readonly stat: { mtimeMs: number; size: number };

  /** Reads `file`, or says in one line why it is not an ASN database. */
  constructor(readonly file: string) {
    let reader: Reader<AsnRecord>;
    try {
      this.stat = statSync(file);
    } catch (err) {
      throw new CodedError('E_USAGE', `--asn-db ${file}: ${messageOf(err)}`);
    }
    try {
      const decoded = new Map<string | number, unknown>();
      reader = new Reader<AsnRecord>(readFileSync(file), { cache: { get: (k) => decoded.get(k), set: (k, v) => decoded.set(k, v) } });
    } catch (err) {
      throw new CodedError('E_USAGE', `--asn-db ${file}: not a MaxMind DB file (${messageOf(err)})`);
    }
    const type = reader.metadata.databaseType;
    if (!/asn/i.test(type)) throw new CodedError('E_USAGE', `--asn-db ${file}: a ${type} database, not an IP-to-ASN one (such as GeoLite2-ASN or DB-IP's ASN Lite)`);
    this.reader = reader;
    this.name = `${type} (${basename(file)})`;
    const built = reader.metadata.buildEpoch;
    this.date = Number.isFinite(built.getTime()) ? built.toISOString().slice(0, 10) : null;
  }

  v4(ip: number): number {
    return this.network(this.reader.get(`${ip >>> 24}.${(ip >>> 16) & 255}.${(ip >>> 8) & 255}.${ip & 255}`));
  }

  v6(g: ArrayLike<number>): number {
    // An IPv6 address in an IPv4-only database has no network.
    if (this.reader.metadata.ipVersion !== 6) return -1;
    for (let i = 0; i < 8; i++) this.groups[i] = g[i].toString(16);
    return this.network(this.reader.get(this.groups.join(':')));
  }

  asn(network: number): number {
    return this.asns[network];
  }

  org(network: number): string {
    return this.orgs[network];
  }

  /** The network of a record, -1 for none or one without a valid AS number. */
  private network(record: AsnRecord | null): number {
    if (record === null) return -1;
    let id = this.ids.get(record);
    if (id === undefined) {
      const asn: unknown = record.autonomous_system_number;
      const org: unknown = record.autonomous_system_organization;
      if (typeof asn !== 'number' || !Number.isInteger(asn) || asn < 1 || asn > MAX_ASN) id = -1;
      else {
        id = this.asns.length;
        this.asns.push(asn);
        this.orgs.push(typeof org === 'string' ? org : '');
      }
      this.ids.set(record, id);
    }
    return id;
  }

  /** Whether the file changed since it was read: the next build reads it again. */
  changed(): boolean {
    try {
      const s = statSync(this.file);
      return s.mtimeMs !== this.stat.mtimeMs || s.size !== this.stat.size;
    } catch {
      return false;
    }
  }
}
