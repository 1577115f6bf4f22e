/**
 * The engine in process, on a 1,000,000-record store (T4 to T6):
 * - a selective query with count=100 (median of 10,000);
 * - sort=ping and sort=works with count=100 (median of 10,000), and the memory of those orders;
 * - get=stats over the default window and over every record (X2), and the ETag of a full dump worked out anew;
 * - the full txt dump of every record;
 * - the full JSON dump (pretty=1), against JSON.stringify of the same objects;
 * - the full CSV dump, against the same objects' values joined by commas and CRLF.
 * Run: npm run bench -- engine [--records N]
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readQuery } from '../src/query/query-string.js';
import { parsePlan } from '../src/query/parse.js';
import { execute } from '../src/query/execute.js';
import { QueryScratch } from '../src/query/scratch.js';
import { countStats } from '../src/query/stats-counts.js';
import { Tagger } from '../src/query/etag.js';
import { statsJson } from '../src/render/stats-body.js';
import { BodyWriter } from '../src/render/envelope.js';
import { OutputBuffer } from '../src/render/output-buffer.js';
import { loadSnapshotFile } from '../src/snapshot/decode.js';
import { csvField } from '../src/store/encode.js';
import { Store } from '../src/store/store.js';
import { NaiveEngine } from '../test/reference/naive-engine.js';
import { CLI, median, option, recordsOption, round2, writeResult } from './harness.js';

const records = recordsOption(1_000_000);
const generatedNow = Math.floor(Date.now() / 1000);
const dir = mkdtempSync(join(tmpdir(), 'proxylist-engine-'));
const file = join(dir, 's.msgpack');
// --snapshot FILE: a given snapshot (its check times end now), to compare revisions on the same records.
const given = option('snapshot');
if (given) copyFileSync(given, file);
else execFileSync(process.execPath, [CLI, 'snapshot', 'generate', '--records', String(records), '--out', file, '--now', String(generatedNow)]);
const { columns, meta } = loadSnapshotFile(file);
// The clock of the records: a given snapshot's check times end when it was generated.
const now = given ? meta.generatedAt : generatedNow;
const store = new Store(columns, meta, { file, loadedAtMs: Date.now(), generation: 1 });
const out = new OutputBuffer();
const scratch = new QueryScratch();

function run(query: string): { ms: number; bytes: number } {
  const parsed = parsePlan(readQuery(query), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  const t0 = performance.now();
  out.reset();
  const n = execute(store, parsed.plan, store.prefixEnd(now - parsed.plan.time), scratch);
  new BodyWriter(store, parsed.plan, scratch.rows, n, now * 1000).write(out, 0, n);
  return { ms: performance.now() - t0, bytes: out.pos };
}
const timed = (query: string, times: number) => {
  for (let i = 0; i < Math.min(times, 20); i++) run(query); // warm-up
  const runs = Array.from({ length: times }, () => run(query));
  return { median_ms: median(runs.map((r) => r.ms)), bytes: runs[0].bytes };
};

const selective = timed('type=http&country=us&count=100', 10_000);
const selectiveJson = timed('type=socks5&anon=elite&country=us,de&count=50&get=json', 10_000);
const byPing = timed('sort=ping&count=100', 10_000);
const byWorks = timed('sort=works&count=100', 10_000);
/** get=stats, counted and written: what a request that misses the cache costs. */
const stats = (query: string, times: number) => {
  const parsed = parsePlan(readQuery(query), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  const plan = parsed.plan;
  const once = () => {
    const t0 = performance.now();
    const counts = countStats(store, plan, store.prefixEnd(now - plan.time), scratch);
    const body = statsJson(counts, store.meta.services, plan.pretty);
    return { ms: performance.now() - t0, count: counts.count, bytes: body.length };
  };
  for (let i = 0; i < 5; i++) once();
  const runs = Array.from({ length: times }, once);
  return { median_ms: median(runs.map((r) => r.ms)), count: runs[0].count };
};
const statsWindow = stats('get=stats', 50);
const statsAll = stats('get=stats&time=99999999', 50);
// A tag is remembered per plan and window: each run here is a new plan, as after a swap or a window move.
const tagger = new Tagger(scratch);
const tagRuns = Array.from({ length: 50 }, () => {
  const parsed = parsePlan(readQuery('time=99999999&get=json'), store.meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  const t0 = performance.now();
  tagger.etag(store, parsed.plan, store.rows, 0);
  return performance.now() - t0;
});
const txtDump = timed('time=99999999', 15);
const jsonDump = timed('time=99999999&get=json', 5);
const csvDump = timed('time=99999999&get=csv', 5);

// JSON.stringify of the same records as plain objects, built beforehand (only the stringify is timed).
const reference = NaiveEngine.fromFile(readFileSync(file), { asnDb: false });
const objects = reference.records.map((r) => ({
  ip: `${r.ip.includes(':') ? `[${r.ip}]` : r.ip}:${r.port}`, ip_out: r.ip_out ?? r.ip, type: r.type, anon: r.anon, ping: Math.round(r.ping_ms) / 1000,
  timecheck: new Date((r.checked_at + 7200) * 1000).toISOString().slice(0, 19).replace('T', ' '), country: r.country.toUpperCase(),
  city: r.city?.ru ?? '', works: String(r.works), ...Object.fromEntries(meta.services.map((s) => [s, (r.services ?? []).includes(s)])),
}));
const stringify = Array.from({ length: 3 }, () => {
  const t0 = performance.now();
  const s = JSON.stringify(objects, null, 2);
  const ms = performance.now() - t0;
  return { ms, bytes: Buffer.byteLength(s) };
});
const stringifyMs = median(stringify.map((s) => s.ms));
if (stringify[0].bytes !== jsonDump.bytes) throw new Error(`the JSON dump is ${jsonDump.bytes} bytes, JSON.stringify ${stringify[0].bytes}`);

// The obvious CSV of the same objects: each value as text, quoted where it needs it, rows joined.
const csvCell = (v: unknown): string => csvField(String(v));
const joined = Array.from({ length: 3 }, () => {
  const t0 = performance.now();
  const s = `${Object.keys(objects[0]).join(',')}\r\n${objects.map((o) => `${Object.values(o).map(csvCell).join(',')}\r\n`).join('')}`;
  const ms = performance.now() - t0;
  return { ms, bytes: Buffer.byteLength(s) };
});
const joinedMs = median(joined.map((s) => s.ms));
if (joined[0].bytes !== csvDump.bytes) throw new Error(`the CSV dump is ${csvDump.bytes} bytes, the joined values ${joined[0].bytes}`);

const result = {
  date: new Date().toISOString(),
  records: store.rows,
  selective_count100_us: Math.round(selective.median_ms * 10000) / 10,
  selective_json_count50_us: Math.round(selectiveJson.median_ms * 10000) / 10,
  sort_ping_count100_us: Math.round(byPing.median_ms * 10000) / 10,
  sort_works_count100_us: Math.round(byWorks.median_ms * 10000) / 10,
  sort_orders_mb: Math.round((store.c.byPing.byteLength + store.c.byWorks.byteLength) / 1e5) / 10,
  stats_default_window_ms: round2(statsWindow.median_ms),
  stats_default_window_records: statsWindow.count,
  stats_every_record_ms: round2(statsAll.median_ms),
  etag_of_full_dump_us: Math.round(median(tagRuns) * 10000) / 10,
  full_txt_dump_ms: Math.round(txtDump.median_ms * 10) / 10,
  full_txt_bytes: txtDump.bytes,
  full_json_dump_ms: Math.round(jsonDump.median_ms),
  json_stringify_same_objects_ms: Math.round(stringifyMs),
  speedup_vs_stringify: round2(stringifyMs / jsonDump.median_ms),
  full_json_bytes: jsonDump.bytes,
  full_csv_dump_ms: Math.round(csvDump.median_ms),
  joined_same_values_ms: Math.round(joinedMs),
  csv_speedup_vs_joined: round2(joinedMs / csvDump.median_ms),
  full_csv_bytes: csvDump.bytes,
};
writeResult(`engine-${records}`, result);
rmSync(dir, { recursive: true, force: true });
