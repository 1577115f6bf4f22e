import { formatIPv6 } from '../core/ipv6.js';
import { recordColumns, widened, type ExtractedRecords, type RecordColumns } from '../store/build.js';
import { ASN_FROM_DATABASE, EXIT_IS_ENTRY, HOSTING, HOSTING_KNOWN, MOBILE, MOBILE_KNOWN, type Network } from '../store/columns.js';
import { AddressInterner } from './address-interner.js';
import type { ExitNetworks } from './asn-database.js';
import type { RecordDecoder } from './record-decoder.js';

const MAX_SKIP_REASONS = 10;

const sameGroups = (a: Uint16Array, b: Uint16Array): boolean => a.every((g, i) => g === b[i]);
/** The reason of a record that names a service the snapshot does not list, before the name (record-decoder.ts). */
const UNKNOWN_SERVICE = 'services names an unknown service';

/**
 * Takes records one at a time, as the decoder reads them, and keeps the
 * fields of the valid ones in columns indexed by valid-record number.
 */
export class RecordExtractor implements ExtractedRecords {
  count = 0;
  skipped = 0;
  readonly skipReasons: string[] = [];
  /** Skipped records by reason; an unknown service's name is left out, so the reasons are few. */
  readonly skipCounts: Record<string, number> = {};
  readonly columns: RecordColumns;
  readonly cities: Array<{ ru: string; en: string }> = [{ ru: '', en: '' }];
  /** Country id by the code's two char codes (c1 * 256 + c2); -1 unseen. */
  private readonly countryIds = new Int16Array(65536).fill(-1);
  private readonly countryCodes: string[] = [];
  /** City id by the raw bytes of the record's `city` value. */
  private readonly cityIds = new Map<string, number>();
  readonly networks: Network[] = [{ asn: 0, org: '' }];
  anyNetFlags = false;
  /** Network id by AS number and organisation; each organisation is kept once. */
  private readonly networkIds = new Map<string, number>();
  readonly exitsV6 = { records: [] as number[], texts: [] as string[] };
  private readonly exitV6Ids = new AddressInterner();
  private readonly entries = { records: [] as number[], texts: [] as string[] };
  private readonly entryV6Ids = new AddressInterner();

  /** `asnDb`: where a record's exit network is looked up when the checker does not say (null: nowhere). */
  constructor(readonly serviceNames: readonly string[], capacity: number, private readonly asnDb: ExitNetworks | null = null) {
    // Room for one record at least: the build's lanes of row ids are told apart by where they start.
    this.columns = recordColumns(Math.max(1, capacity), serviceNames.length);
  }

  /** Takes the record the decoder has just read from `b`. */
  take(d: RecordDecoder, b: Buffer, index: number): void {
    if (d.problem !== null) {
      this.skipped++;
      if (this.skipReasons.length < MAX_SKIP_REASONS) this.skipReasons.push(`record ${index}: ${d.problem}`);
      const reason = d.problem.startsWith(UNKNOWN_SERVICE) ? UNKNOWN_SERVICE : d.problem;
      this.skipCounts[reason] = (this.skipCounts[reason] ?? 0) + 1;
      return;
    }
    const m = this.count++;
    const c = this.columns;
    if (!d.ipV6) c.ip[m] = d.ip;
    else {
      c.ip[m] = this.entryV6Ids.id(d.ipGroups);
      if (this.entryV6Ids.isNew) this.entries.texts.push(formatIPv6(d.ipGroups));
      this.entries.records.push(m);
    }
    c.port[m] = d.port;
    c.type[m] = d.type;
    c.anon[m] = d.anon;
    c.works[m] = d.works;
    c.ping[m] = d.ping;
    c.checkedAt[m] = d.checkedAt;
    // A record without ip_out, or with its entry's address as ip_out, leaves from its entry; an IPv6 one's line has the text.
    if (d.ipV6 && (d.ipOutV6 ? sameGroups(d.ipOutGroups, d.ipGroups) : d.ipOut < 0)) {
      c.ipOut[m] = EXIT_IS_ENTRY;
      this.exitsV6.records.push(m);
    } else if (d.ipOutV6) {
      c.ipOut[m] = this.exitV6Ids.id(d.ipOutGroups);
      if (this.exitV6Ids.isNew) this.exitsV6.texts.push(formatIPv6(d.ipOutGroups));
      this.exitsV6.records.push(m);
    } else c.ipOut[m] = d.ipOut >= 0 ? d.ipOut : d.ip;
    c.services[m] = d.services;

    let countryId = this.countryIds[d.country];
    if (countryId < 0) {
      this.countryIds[d.country] = countryId = this.countryCodes.length;
      this.countryCodes.push(String.fromCharCode(d.country >> 8, d.country & 255));
    }
    c.country[m] = countryId;

    let cityId = 0;
    if (d.cityStart >= 0) {
      const key = b.toString('latin1', d.cityStart, d.cityEnd);
      const known = this.cityIds.get(key);
      if (known !== undefined) cityId = known;
      else {
        this.cityIds.set(key, (cityId = this.cities.length));
        this.cities.push({ ru: d.ruStart >= 0 ? b.toString('utf8', d.ruStart, d.ruEnd) : '', en: d.enStart >= 0 ? b.toString('utf8', d.enStart, d.enEnd) : '' });
      }
    }
    c.city[m] = cityId;
    // An empty organisation is an unknown one.
    let asn = d.asn;
    let fromDatabase = 0;
    let org = d.orgStart < 0 || d.orgEnd === d.orgStart ? '' : b.toString('utf8', d.orgStart, d.orgEnd);
    // What the checker did not say, from the database by the exit's address: the checker's values always win.
    if (this.asnDb !== null && (asn === 0 || org === '')) {
      const db = this.asnDb;
      const net = d.ipOutV6 ? db.v6(d.ipOutGroups) : d.ipOut >= 0 ? db.v4(d.ipOut) : d.ipV6 ? db.v6(d.ipGroups) : db.v4(d.ip);
      if (net >= 0 && (asn === 0 || asn === db.asn(net))) {
        if (asn === 0) fromDatabase = ASN_FROM_DATABASE;
        asn = db.asn(net);
        if (org === '') org = db.org(net);
      }
    }
    const network = asn === 0 && org === '' ? 0 : this.networkId(asn, org);
    // The columns start as zeros: a zero is not written, so a snapshot without these fields never touches their pages (store/build.ts).
    if (network !== 0) {
      // The column grows wider only when an id no longer fits (store/build.ts, widened).
      while (network > (c.network instanceof Uint8Array ? 255 : c.network instanceof Uint16Array ? 65535 : 0xffffffff)) c.network = widened(c.network, m);
      c.network[m] = network;
    }
    const flags = (d.hosting < 0 ? 0 : HOSTING_KNOWN | (d.hosting * HOSTING)) | (d.mobile < 0 ? 0 : MOBILE_KNOWN | (d.mobile * MOBILE)) | fromDatabase;
    if (flags !== 0) {
      c.netFlags[m] = flags;
      this.anyNetFlags = true;
    }
  }

  /** The id of the network of AS number `asn` (0: unknown) run by `org` ('' unknown). */
  private networkId(asn: number, org: string): number {
    const key = `${asn} ${org}`;
    let id = this.networkIds.get(key);
    if (id === undefined) {
      this.networkIds.set(key, (id = this.networks.length));
      this.networks.push({ asn, org });
    }
    return id;
  }

  /** The records whose ip is IPv6, their addresses' texts and words, by id (see ExtractedRecords). */
  get entriesV6(): ExtractedRecords['entriesV6'] {
    return { ...this.entries, words: this.entryV6Ids.words.subarray(0, this.entryV6Ids.count * 4) };
  }

  /** Country codes in alphabetical order (ids do not depend on record order); renumbers the column. */
  countries(): string[] {
    const sorted = [...this.countryCodes].sort();
    const remap = this.countryCodes.map((c) => sorted.indexOf(c));
    const country = this.columns.country;
    for (let m = 0; m < this.count; m++) country[m] = remap[country[m]];
    return sorted;
  }
}
