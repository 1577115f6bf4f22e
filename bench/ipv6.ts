/**
 * What IPv6 costs a store (docs/operations.md, the memory formula): the
 * bytes of its columns, built in process from snapshots of the same seed
 * and size with no IPv6, with IPv6 exits only (a fifth of the records),
 * and with a tenth of the records listening on IPv6 as well; from their
 * differences, what an IPv6 exit and an IPv6 entry add to a record, against
 * what the formula states; and the load time of each (median of 3).
 * Run: npm run bench -- ipv6 [--records N]
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadSnapshotFile } from '../src/snapshot/decode.js';
import { columnViews } from '../src/store/columns.js';
import { CLI, median, recordsOption, round2, writeResult } from './harness.js';

const records = recordsOption(1_000_000);
const work = process.env.TMPDIR!;
const now = Math.floor(Date.now() / 1000);
const SNAPSHOTS = { none: ['0', '0'], exits: ['0', '0.2'], entries: ['0.1', '0.2'] } as const;

const measured = Object.fromEntries(
  Object.entries(SNAPSHOTS).map(([name, [entries, exits]]) => {
    const file = join(work, `${name}.msgpack`);
    execFileSync(process.execPath, [CLI, 'snapshot', 'generate', '--records', String(records), '--out', file, '--now', String(now), '--ipv6-entries', entries, '--ipv6-exits', exits]);
    const ms: number[] = [];
    let built = loadSnapshotFile(file);
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      built = loadSnapshotFile(file);
      ms.push(performance.now() - start);
    }
    const { columns, meta } = built;
    // The bytes the columns hold; the mappings they are carved from are larger, and only their pages written cost memory.
    const bytes = columnViews(columns).reduce((n, v) => n + v.byteLength, 0);
    const v6Lines = meta.ipv6Entries;
    const lineBytes = columns.lines.off[columns.rows];
    console.error(`${name}: ${columns.rows} rows, ${meta.ipv6Entries} IPv6 entries, ${meta.ipv6Exits} IPv6 exits, ${bytes} bytes, load ${round2(median(ms))} ms`);
    return [name, { rows: columns.rows, ipv6_entries: v6Lines, ipv6_exits: meta.ipv6Exits, bytes, bytes_per_record: round2(bytes / columns.rows), line_bytes: lineBytes, load_ms: round2(median(ms)), distinct_v6_entries: columns.v6Entries.length / 4, exit_text_bytes: columns.exitV6Text.bytes.byteLength }];
  }),
) as Record<keyof typeof SNAPSHOTS, { rows: number; ipv6_entries: number; ipv6_exits: number; bytes: number; bytes_per_record: number; line_bytes: number; load_ms: number; distinct_v6_entries: number; exit_text_bytes: number }>;

const { none, exits, entries } = measured;
// Per record, as the formula counts: rows differ a little between snapshots (duplicates), so each is scaled to the first's rows.
const scaled = (m: typeof none) => (m.bytes / m.rows) * none.rows;
const result = {
  date: new Date().toISOString(),
  records,
  measured,
  per_ipv6_exit: round2((scaled(exits) - none.bytes) / (exits.ipv6_exits * (none.rows / exits.rows))),
  per_ipv6_entry: round2((scaled(entries) - scaled(exits)) / (entries.ipv6_entries * (none.rows / entries.rows))),
  /** What the formula allows an IPv6 entry: its 16 bytes and the longer line it has, measured. */
  entry_allowance: round2(16 + (entries.line_bytes / entries.rows - none.line_bytes / none.rows) * entries.rows / entries.ipv6_entries),
  load_ms_ratio: { exits: round2(exits.load_ms / none.load_ms), entries: round2(entries.load_ms / none.load_ms) },
};
writeResult(`ipv6-${records}`, result);
