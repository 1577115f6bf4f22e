/**
 * The build thread's entry: loads the snapshot file of each message and
 * sends the built columns back (in shared memory), then collects its garbage, so
 * the decoded file and the build's working space are gone between loads.
 */
import { parentPort } from 'node:worker_threads';
import { allowFullCollections, fullCollection } from '../core/full-collection.js';
import { CodedError, messageOf } from '../core/errors.js';
import { yieldToEventLoop } from '../core/thread-priority.js';
import { AsnLookup, readDefaultAsnTables, type AsnTables, type ExitNetworks } from './asn-database.js';
import { MmdbNetworks } from './asn-mmdb.js';
import { loadSnapshotFile } from './decode.js';
import type { BuildRequest } from './build-thread.js';

// The buffers nothing holds go back to the system after each build.
allowFullCollections();

yieldToEventLoop();
/**
 * This thread's lookups: in the default database's tables it was handed, or
 * read here once (and handed back, for the threads after it); or in an
 * operator's file, read again when it changes.
 */
let lookup: ExitNetworks | null = null;

/** The lookups in `file`: the ones open, unless the file changed and reads well; a file that no longer reads keeps the last one that did. */
function fileNetworks(file: string): ExitNetworks {
  const open = lookup instanceof MmdbNetworks && lookup.file === file ? lookup : null;
  if (open && !open.changed()) return open;
  try {
    return new MmdbNetworks(file);
  } catch (err) {
    if (open) return open;
    throw err;
  }
}

parentPort!.on('message', ({ path, maxSkippedShare, asn }: BuildRequest) => {
  try {
    let read: AsnTables | null = null;
    if (asn === 'none') lookup = null;
    else if (asn === 'default') lookup = lookup instanceof AsnLookup ? lookup : new AsnLookup((read = readDefaultAsnTables()));
    else if ('file' in asn) lookup = fileNetworks(asn.file);
    else if (!(lookup instanceof AsnLookup)) lookup = new AsnLookup(asn);
    const { columns, meta } = loadSnapshotFile(path, fullCollection, maxSkippedShare, lookup);
    // The columns are shared memory: the message hands them over without a copy.
    parentPort!.postMessage({ ok: true, columns, meta, asnTables: read });
  } catch (err) {
    // A file that breaks the contract is the checker's to fix; anything else is a bug here, said as such.
    if (err instanceof CodedError) parentPort!.postMessage({ ok: false, code: err.code, message: messageOf(err) });
    else parentPort!.postMessage({ ok: false, code: 'E_BUILD_FAILED', message: `building the store failed (a bug, not the file): ${err instanceof Error ? err.stack : String(err)}` });
  }
  fullCollection();
});
