import type { ExtractedRecords } from '../store/build.js';
import type { RecordDecoder } from './record-decoder.js';

const MAX_SKIP_REASONS = 10;

/**
 * Takes records one at a time, as the decoder reads them, and keeps the
 * fields of the valid ones in columns indexed by valid-record number.
 */
export class RecordExtractor implements ExtractedRecords {
  count = 0;
  skipped = 0;
  readonly skipReasons: string[] = [];
  readonly ip: Uint32Array;
  readonly port: Uint16Array;
  readonly type: Uint8Array;
  readonly anon: Uint8Array;
  readonly works: Uint8Array;
  readonly ping: Float64Array;
  readonly checkedAt: Uint32Array;
  readonly country: Uint16Array;
  readonly city: Uint32Array;
  readonly services: Uint32Array;
  readonly ipOut: Uint32Array;
  readonly cities: Array<{ ru: string; en: string }> = [{ ru: '', en: '' }];
  /** Country id by the code's two char codes (c1 * 256 + c2); -1 unseen. */
  private readonly countryIds = new Int16Array(65536).fill(-1);
  private readonly countryCodes: string[] = [];
  /** City id by the raw bytes of the record's `city` value. */
  private readonly cityIds = new Map<string, number>();

  constructor(readonly serviceNames: readonly string[], capacity: number) {
    this.ip = new Uint32Array(capacity);
    this.port = new Uint16Array(capacity);
    this.type = new Uint8Array(capacity);
    this.anon = new Uint8Array(capacity);
    this.works = new Uint8Array(capacity);
    this.ping = new Float64Array(capacity);
    this.checkedAt = new Uint32Array(capacity);
    this.country = new Uint16Array(capacity);
    this.city = new Uint32Array(capacity);
    this.services = new Uint32Array(capacity);
    this.ipOut = new Uint32Array(capacity);
  }

  /** Takes the record the decoder has just read from `b`. */
  take(d: RecordDecoder, b: Buffer, index: number): void {
    if (d.problem !== null) {
      this.skipped++;
      if (this.skipReasons.length < MAX_SKIP_REASONS) this.skipReasons.push(`record ${index}: ${d.problem}`);
      return;
    }
    const m = this.count++;
    this.ip[m] = d.ip;
    this.port[m] = d.port;
    this.type[m] = d.type;
    this.anon[m] = d.anon;
    this.works[m] = d.works;
    this.ping[m] = d.ping;
    this.checkedAt[m] = d.checkedAt;
    this.ipOut[m] = d.ipOut >= 0 ? d.ipOut : d.ip;
    this.services[m] = d.services;

    let countryId = this.countryIds[d.country];
    if (countryId < 0) {
      this.countryIds[d.country] = countryId = this.countryCodes.length;
      this.countryCodes.push(String.fromCharCode(d.country >> 8, d.country & 255));
    }
    this.country[m] = countryId;

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
    this.city[m] = cityId;
  }

  /** Country codes in alphabetical order (ids do not depend on record order); renumbers the column. */
  countries(): string[] {
    const sorted = [...this.countryCodes].sort();
    const remap = this.countryCodes.map((c) => sorted.indexOf(c));
    for (let m = 0; m < this.count; m++) this.country[m] = remap[this.country[m]];
    return sorted;
  }
}
