import { recordColumns, type ExtractedRecords, type RecordColumns } from '../store/build.js';
import type { RecordDecoder } from './record-decoder.js';

const MAX_SKIP_REASONS = 10;
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
  readonly exitsV6 = { records: [] as number[], texts: [] as string[] };
  /** Id of each IPv6 exit's text in `exitsV6.texts`. */
  private readonly exitV6Ids = new Map<string, number>();
  readonly entriesV6 = { records: [] as number[], texts: [] as string[], words: [] as number[] };
  /** Id of each IPv6 entry address's text in `entriesV6.texts`. */
  private readonly entryV6Ids = new Map<string, number>();

  constructor(readonly serviceNames: readonly string[], capacity: number) {
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
    if (d.ipV6 === null) c.ip[m] = d.ip;
    else {
      const { text, groups } = d.ipV6;
      let id = this.entryV6Ids.get(text);
      if (id === undefined) {
        this.entryV6Ids.set(text, (id = this.entriesV6.texts.push(text) - 1));
        for (let w = 0; w < 8; w += 2) this.entriesV6.words.push(groups[w] * 65536 + groups[w + 1]);
      }
      c.ip[m] = id;
      this.entriesV6.records.push(m);
    }
    c.port[m] = d.port;
    c.type[m] = d.type;
    c.anon[m] = d.anon;
    c.works[m] = d.works;
    c.ping[m] = d.ping;
    c.checkedAt[m] = d.checkedAt;
    // A record without ip_out leaves from its entry, which may be IPv6.
    const exitV6 = d.ipOutV6 ?? (d.ipOut < 0 ? d.ipV6?.text ?? null : null);
    if (exitV6 !== null) {
      let id = this.exitV6Ids.get(exitV6);
      if (id === undefined) this.exitV6Ids.set(exitV6, (id = this.exitsV6.texts.push(exitV6) - 1));
      c.ipOut[m] = id;
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
