import { Worker } from 'node:worker_threads';
import { CodedError, type ErrorCode } from '../core/errors.js';
import type { StoreColumns, StoreMeta } from '../store/columns.js';
import type { AsnTables } from './asn-database.js';
import { DEFAULT_MAX_SKIPPED_SHARE } from './decode.js';
import type { AsnDbChoice } from './exit-networks.js';

/**
 * Where exits are looked up (--asn-db): the default database, or its tables
 * once one thread has read them; none; an operator's file.
 */
export type AsnSource = Exclude<AsnDbChoice, 'default'> | 'default' | AsnTables;

/** What the build thread is asked: a file to load, the share of skipped records it may have, and where exits are looked up. */
export interface BuildRequest {
  path: string;
  maxSkippedShare: number;
  asn: AsnSource;
}

type WorkerReply = { ok: true; columns: StoreColumns; meta: StoreMeta; asnTables: AsnTables | null } | { ok: false; code: ErrorCode; message: string };

/** The default database's tables, read by the first build that needed them: every build thread of the process shares them. */
let defaultTables: AsnTables | null = null;
type Built = { columns: StoreColumns; meta: StoreMeta };

/**
 * The thread snapshots are built on, one load at a time, so the event loop of
 * the server never decodes or builds. It lives as long as its owner: a
 * reload then costs no thread start, and the thread's own memory is part of
 * the process at rest rather than a rise at each reload. The thread collects
 * its garbage after each build (build-worker.ts), so what one build decoded
 * is gone before the next. A thread that dies (out of memory, a bug) fails
 * its load and is started again for the next one.
 */
export class BuildThread {
  private worker: Worker | null = null;
  /** The load in progress; loads wait for the one before them. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** What ended the thread, when an uncaught error did. */
  private crash: string | null = null;

  /** `maxSkippedShare`: the share of skipped records past which a snapshot is rejected (--max-skipped-share); `asnDb`: where exits are looked up (--asn-db). */
  constructor(private readonly maxSkippedShare = DEFAULT_MAX_SKIPPED_SHARE, private readonly asnDb: AsnDbChoice = 'default') {}

  load(path: string): Promise<Built> {
    const next = this.queue.then(() => this.run(path));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Stops the thread; a load in progress fails. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private run(path: string): Promise<Built> {
    if (this.closed) return Promise.reject(new CodedError('E_BUILD_FAILED', 'the snapshot feed is closed'));
    const worker = (this.worker ??= this.start());
    return new Promise((resolve, reject) => {
      const done = (): void => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        // An idle thread does not keep the process alive.
        worker.unref();
      };
      const onMessage = (reply: WorkerReply): void => {
        done();
        if (reply.ok) {
          defaultTables ??= reply.asnTables;
          resolve({ columns: reply.columns, meta: reply.meta });
        }
        else reject(new CodedError(reply.code, reply.message));
      };
      const onExit = (code: number): void => {
        done();
        if (this.worker === worker) this.worker = null;
        const why = this.crash ?? `it exited with code ${code} (out of memory?)`;
        this.crash = null;
        reject(new CodedError('E_BUILD_FAILED', this.closed ? 'the snapshot feed is closed' : `the build thread stopped: ${why}; not the file's fault`));
      };
      worker.on('message', onMessage);
      worker.on('exit', onExit);
      worker.ref();
      const asn: AsnSource = this.asnDb === 'default' ? (defaultTables ?? 'default') : this.asnDb;
      worker.postMessage({ path, maxSkippedShare: this.maxSkippedShare, asn } satisfies BuildRequest);
    });
  }

  private start(): Worker {
    const worker = new Worker(new URL('./build-worker.js', import.meta.url));
    // An uncaught error ends the thread: its 'exit' fails the load in progress, saying this.
    worker.on('error', (err) => (this.crash = err.message));
    worker.unref();
    return worker;
  }
}
