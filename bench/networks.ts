/**
 * What who runs each exit costs a store (docs/operations.md, the memory
 * formula; docs/snapshot.md): the bytes of its columns and its load time,
 * built in process from one generated snapshot of 1,000,000 records in
 * three forms: without the network fields and without the database, with
 * the fields as the generator writes them, and without the fields but with
 * every exit looked up in the default database. Load times are medians of 3;
 * the database's own read is timed apart, once.
 * Run: npm run bench -- networks [--records N]
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AsnLookup, readDefaultAsnTables } from '../src/snapshot/asn-database.js';
import { loadSnapshotFile } from '../src/snapshot/decode.js';
import { encodeSnapshot, generateRecords } from '../src/snapshot/generate.js';
import { writeFileAtomic } from '../src/core/atomic-write.js';
import { columnViews } from '../src/store/columns.js';
import { median, recordsOption, round2, writeResult } from './harness.js';

const records = recordsOption(1_000_000);
const work = process.env.TMPDIR!;
const now = Math.floor(Date.now() / 1000);

const withFields = generateRecords({ records, seed: 7, now });
const withoutFields = withFields.map(({ asn: _a, org: _o, hosting: _h, mobile: _m, ...rest }) => rest);
const files = { without: join(work, 'without.msgpack'), fields: join(work, 'fields.msgpack') };
writeFileAtomic(files.without, encodeSnapshot(withoutFields, now));
writeFileAtomic(files.fields, encodeSnapshot(withFields, now));

let start = performance.now();
const tables = readDefaultAsnTables();
const readMs = performance.now() - start;
const tableBytes = [tables.v4.starts, tables.v4.ends, tables.v4.nets, tables.v6.starts, tables.v6.ends, tables.v6.nets, tables.asns, tables.orgBytes, tables.orgOff].reduce((n, v) => n + v.byteLength, 0);
const lookup = new AsnLookup(tables);

const forms = { without: [files.without, null], fields: [files.fields, null], database: [files.without, lookup] } as const;
const measured = Object.fromEntries(
  Object.entries(forms).map(([name, [file, db]]) => {
    const ms: number[] = [];
    let built = loadSnapshotFile(file, undefined, undefined, db);
    for (let i = 0; i < 3; i++) {
      start = performance.now();
      built = loadSnapshotFile(file, undefined, undefined, db);
      ms.push(performance.now() - start);
    }
    const { columns, meta } = built;
    // The bytes the columns hold, and the networks' strings outside them.
    const bytes = columnViews(columns).reduce((n, v) => n + v.byteLength, 0);
    let withAsn = 0;
    for (let r = 0; r < columns.rows; r++) withAsn += Number(meta.networks[columns.network[r]].asn !== 0);
    const row = { rows: columns.rows, bytes, bytes_per_record: round2(bytes / columns.rows), load_ms: round2(median(ms)), networks: meta.networks.length, rows_with_asn: withAsn };
    console.error(`${name}: ${JSON.stringify(row)}`);
    return [name, row];
  }),
);

writeResult(`networks-${records}`, {
  date: new Date().toISOString(),
  records,
  database: { name: tables.name, date: tables.date, read_ms: round2(readMs), bytes: tableBytes, ranges: tables.v4.nets.length + tables.v6.nets.length, networks: tables.asns.length },
  measured,
  load_ms_ratio: { fields: round2(measured.fields.load_ms / measured.without.load_ms), database: round2(measured.database.load_ms / measured.without.load_ms) },
});
