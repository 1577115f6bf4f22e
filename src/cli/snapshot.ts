import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.js';
import { CodedError } from '../core/errors.js';
import { openExitNetworks, parseAsnDb } from '../snapshot/exit-networks.js';
import { DEFAULT_MAX_SKIPPED_SHARE, loadSnapshotFile } from '../snapshot/decode.js';
import { ANONS, TYPES } from '../core/vocabulary.js';
import { generateSnapshot } from '../snapshot/generate.js';
import { HOSTING, HOSTING_KNOWN, MOBILE, MOBILE_KNOWN, type StoreColumns, type StoreMeta } from '../store/columns.js';
import { integerOption, parseOptions, printedHelp, shareOption } from './args.js';

export const SNAPSHOT_USAGE = `proxylist snapshot generate --records N --out FILE [options]   a realistic test snapshot
proxylist snapshot inspect FILE [--max-skipped-share X] [--asn-db FILE|none]  what the server would load, or why not`;

const HELP: Record<string, string> = {
  generate: `usage: proxylist snapshot generate --records N --out FILE [options]
  --records N   records to generate (a few are duplicates of others, as a checker's output has)
  --out FILE    where to write it (replaced in one rename)
  --seed S      the random seed (default 1): the same seed gives the same bytes
  --now UNIX    the check times end here (default: now)
  --ipv6-entries X  the share of records that listen on IPv6 (default 0.05)
  --ipv6-exits X    the share of the others that leave through IPv6 (default 0.2)`,
  inspect: `usage: proxylist snapshot inspect FILE [--max-skipped-share X] [--asn-db FILE|none]
  FILE                   the snapshot; exits 1 with the reason when the server would reject it
  --max-skipped-share X  as the server's (default ${DEFAULT_MAX_SKIPPED_SHARE}): more invalid records than this share reject the file
  --asn-db FILE|none     as the server's: exits the checker does not place are looked up in
                         this MaxMind DB file, or not at all`,
};

function generate(args: string[]): void {
  const { values } = parseOptions(args, { records: { type: 'string' }, out: { type: 'string' }, seed: { type: 'string' }, now: { type: 'string' }, 'ipv6-entries': { type: 'string' }, 'ipv6-exits': { type: 'string' } });
  if (!values.out) throw new CodedError('E_USAGE', 'missing --out FILE');
  if (values.records === undefined) throw new CodedError('E_USAGE', 'missing --records N');
  const records = integerOption('records', values.records, 0, 0, 50_000_000);
  const bytes = generateSnapshot({
    records,
    seed: integerOption('seed', values.seed, 1, 0, 0xffffffff),
    now: integerOption('now', values.now, Math.floor(Date.now() / 1000), 3600, 0xffffffff),
    ipv6Entries: shareOption('ipv6-entries', values['ipv6-entries'], 0.05),
    ipv6Exits: shareOption('ipv6-exits', values['ipv6-exits'], 0.2),
  });
  const folder = dirname(resolve(values.out));
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new CodedError('E_USAGE', `cannot write ${values.out}: the folder ${folder} does not exist`);
  if (existsSync(values.out) && statSync(values.out).isDirectory()) throw new CodedError('E_USAGE', `cannot write ${values.out}: it is a folder`);
  writeFileAtomic(values.out, bytes);
  const { columns, meta } = loadSnapshotFile(values.out);
  process.stdout.write(`wrote ${records} records (${bytes.length} bytes) to ${values.out}: ${columns.rows} distinct, ${meta.duplicates} duplicates of an (ip, port, type)\n`);
}

/** How many records say who runs their exit (docs/snapshot.md): an AS number, an organisation, each flag known and set. */
function networkCounts(columns: StoreColumns, meta: StoreMeta) {
  const db = meta.asnDatabase ?? null;
  const counts = {
    with_asn: 0, asn_from_snapshot: 0, asn_from_database: db?.filled ?? 0, database: db && `${db.name}${db.date ? ` (${db.date})` : ''}`,
    with_org: 0, asns: 0, hosting: { true: 0, false: 0 }, mobile: { true: 0, false: 0 },
  };
  const asns = new Set<number>();
  for (let r = 0; r < columns.rows; r++) {
    const n = meta.networks[columns.network[r]];
    if (n.asn !== 0) {
      counts.with_asn++;
      asns.add(n.asn);
    }
    if (n.org !== '') counts.with_org++;
    const f = columns.netFlags[r];
    if (f & HOSTING_KNOWN) counts.hosting[f & HOSTING ? 'true' : 'false']++;
    if (f & MOBILE_KNOWN) counts.mobile[f & MOBILE ? 'true' : 'false']++;
  }
  counts.asns = asns.size;
  counts.asn_from_snapshot = counts.with_asn - counts.asn_from_database;
  return counts;
}

/** The checker's pre-publish check: exits non-zero when the server would reject the file. */
function inspect(args: string[]): void {
  const { positionals, values } = parseOptions(args, { 'max-skipped-share': { type: 'string' }, 'asn-db': { type: 'string' } }, true);
  if (positionals.length !== 1) throw new CodedError('E_USAGE', 'usage: proxylist snapshot inspect FILE [--max-skipped-share X] [--asn-db FILE|none]');
  const lookup = openExitNetworks(parseAsnDb(values['asn-db']));
  const { columns, meta } = loadSnapshotFile(positionals[0], undefined, shareOption('max-skipped-share', values['max-skipped-share'], DEFAULT_MAX_SKIPPED_SHARE), lookup);
  const tally = (codes: ArrayLike<number>, names: readonly string[]): Record<string, number> => {
    const counts: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
    for (let i = 0; i < columns.rows; i++) counts[names[codes[i]]]++;
    return counts;
  };
  const byCountry = Object.entries(tally(columns.country, meta.countries)).sort((a, b) => b[1] - a[1]);
  const report = {
    file: positionals[0],
    generated_at: meta.generatedAt,
    services: meta.services,
    records: columns.rows,
    ipv6_entries: meta.ipv6Entries,
    ipv6_exits: meta.ipv6Exits,
    skipped: meta.skipped,
    duplicates_dropped: meta.duplicates,
    skip_reasons: meta.skipCounts,
    first_skipped: meta.skipReasons,
    by_type: tally(columns.type, TYPES),
    by_anon: tally(columns.anon, ANONS),
    by_country: Object.fromEntries(byCountry),
    exit_networks: networkCounts(columns, meta),
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}

export function snapshotCommand(args: string[]): void {
  if (printedHelp(args, SNAPSHOT_USAGE, HELP)) return;
  const [sub, ...rest] = args;
  if (sub === 'generate') return generate(rest);
  if (sub === 'inspect') return inspect(rest);
  throw new CodedError('E_USAGE', `unknown snapshot command "${sub}"; see proxylist snapshot --help`);
}
