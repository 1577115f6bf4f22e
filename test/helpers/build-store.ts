import { createHash } from 'node:crypto';
import { Packr } from 'msgpackr';
import { DEFAULT_SERVICES } from '../../src/core/vocabulary.js';
import { RecordDecoder } from '../../src/snapshot/record-decoder.js';
import { RecordExtractor } from '../../src/snapshot/record-extractor.js';
import { buildStore } from '../../src/store/build.js';
import type { StoreColumns, StoreMeta } from '../../src/store/columns.js';

/** A store from records held as objects: each encoded, then read as the decoder reads a file. */
export function buildFromRecords(proxies: readonly unknown[], services: readonly string[] = DEFAULT_SERVICES, generatedAt = 0, release?: (x: RecordExtractor) => void): { columns: StoreColumns; meta: StoreMeta } {
  const packr = new Packr({ useRecords: false });
  const decoder = new RecordDecoder(services);
  const x = new RecordExtractor(services, proxies.length);
  const content = createHash('sha256').update(packr.pack([generatedAt, services]));
  proxies.forEach((r, i) => {
    const bytes = packr.pack(r);
    content.update(bytes);
    decoder.read(bytes, 0);
    x.take(decoder, bytes, i);
  });
  return buildStore(x, generatedAt, content.digest('base64url'), release && (() => release(x)));
}
