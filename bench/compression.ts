/**
 * Compression levels on the JSON dumps: gzip levels 1-6 and brotli
 * qualities 1-5, each on the default window's JSON dump (get=json, time=600)
 * and the whole store's (time=3600) of 100,000 and 1,000,000 records: the
 * encoded size against the plain one, and MB of plain JSON per second on one
 * thread (the work one request's compression puts on libuv's pool).
 * Run: npm run bench -- compression [--quick]   (--quick: 100,000 records only)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { execute } from '../src/query/execute.js';
import { parsePlan } from '../src/query/parse.js';
import { readQuery } from '../src/query/query-string.js';
import { QueryScratch } from '../src/query/scratch.js';
import { BodyWriter } from '../src/render/envelope.js';
import { OutputBuffer } from '../src/render/output-buffer.js';
import { loadSnapshotFile } from '../src/snapshot/decode.js';
import { Store } from '../src/store/store.js';
import { CLI, writeResult } from './harness.js';

const sizes = process.argv.includes('--quick') ? [100_000] : [100_000, 1_000_000];
const now = Math.floor(Date.now() / 1000);
const dir = mkdtempSync(join(tmpdir(), 'proxylist-compression-'));

function dump(store: Store, query: string): Uint8Array {
  const parsed = parsePlan(readQuery(query), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  const scratch = new QueryScratch();
  const n = execute(store, parsed.plan, store.prefixEnd(now - parsed.plan.time), scratch);
  const out = new OutputBuffer();
  new BodyWriter(store, parsed.plan, scratch.rows, n, now * 1000).write(out, 0, n);
  return out.view().slice();
}

const codecs = [
  ...[1, 2, 3, 4, 5, 6].map((level) => ({ name: `gzip ${level}`, run: (b: Uint8Array) => gzipSync(b, { level }) })),
  ...[1, 2, 3, 4, 5].map((q) => ({
    name: `br ${q}`,
    run: (b: Uint8Array) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: q, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: b.length } }),
  })),
];

const results: Array<Record<string, unknown>> = [];
try {
  for (const records of sizes) {
    const file = join(dir, `s-${records}.msgpack`);
    execFileSync(process.execPath, [CLI, 'snapshot', 'generate', '--records', String(records), '--out', file, '--now', String(now)]);
    const { columns, meta } = loadSnapshotFile(file);
    const store = new Store(columns, meta, { file, loadedAtMs: Date.now(), generation: 1 });
    for (const query of ['get=json', 'get=json&time=3600']) {
      const plain = dump(store, query);
      // Larger bodies once (they take seconds), smaller ones three times, the best kept.
      const repeats = plain.length > 100e6 ? 1 : 3;
      for (const c of codecs) {
        let best = Infinity;
        let encoded = 0;
        for (let i = 0; i < repeats; i++) {
          const t0 = performance.now();
          encoded = c.run(plain).length;
          best = Math.min(best, performance.now() - t0);
        }
        const row = { records, query, codec: c.name, plain_mb: +(plain.length / 1e6).toFixed(1), encoded_mb: +(encoded / 1e6).toFixed(2), ratio: +(plain.length / encoded).toFixed(1), mb_per_s: Math.round(plain.length / 1e6 / (best / 1000)), ms: Math.round(best) };
        results.push(row);
        console.error(JSON.stringify(row));
      }
    }
  }
  const doc = { date: new Date().toISOString(), cpu: cpus()[0]?.model, node: process.version, results };
  writeResult('compression', doc, false);
  console.log('| records | query | codec | plain MB | encoded MB | ratio | MB/s | ms |\n|---|---|---|---|---|---|---|---|');
  for (const r of results) console.log(`| ${r.records} | ${r.query} | ${r.codec} | ${r.plain_mb} | ${r.encoded_mb} | ${r.ratio} | ${r.mb_per_s} | ${r.ms} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
