import { Worker } from 'node:worker_threads';
import type { KeyTable } from '../access/keys.js';
import type { TlsPair } from '../http/tls-pair.js';
import type { Logger } from '../core/log.js';
import type { Store } from '../store/store.js';
import type { FromServing, ServingData, StoreMessage, ToServing } from './messages.js';

/** How long the other threads get to close their apps when one died, before the process exits regardless. */
const DIE_WAIT_MS = 3000;

/** A store as a message: its shared columns and history, nothing copied but the names. */
export function storeMessage(store: Store): StoreMessage {
  const { changedAt, snapshots, versions } = store.history;
  return { columns: store.c, meta: store.meta, source: store.source, history: { changedAt, snapshots, versions } };
}

interface Thread {
  worker: Worker;
  exited: Promise<number>;
  /** What waits for a reply of this thread, told when it ends instead (a stop under way). */
  waiting: Set<() => void>;
  ended: boolean;
  /** What its uncaught exception said, if one ended it. */
  failure: string | null;
}

/** What the main thread answers a serving thread's questions with. */
export interface MainAnswers {
  health(): Promise<{ ready: boolean; body: string }>;
  metrics(): Promise<string>;
}

/**
 * The serving threads beside the main thread (docs/threads.md): each runs
 * an app on the same port (threads/serving-worker.ts) and answers from the
 * stores and keys the main thread hands it, with the limits in shared
 * memory. A thread that dies takes the process down: `onDeath` is told once.
 */
export class ServingThreads {
  private readonly threads: Thread[] = [];
  private stopping = false;
  private dead = false;
  private nextId = 1;
  private readonly pending = new Map<number, (value: unknown) => void>();
  onDeath: (reason: string) => void = () => undefined;

  constructor(private readonly answers: MainAnswers, private readonly log: Logger) {}

  get count(): number {
    return this.threads.length;
  }

  /** Starts `n` serving threads; resolves once each listens. */
  async start(n: number, data: Omit<ServingData, 'index'>): Promise<void> {
    const ready: Array<Promise<void>> = [];
    for (let i = 1; i <= n; i++) {
      const worker = new Worker(new URL('./serving-worker.js', import.meta.url), { workerData: { ...data, index: i } satisfies ServingData });
      const thread: Thread = { worker, exited: new Promise((resolve) => worker.once('exit', resolve)), waiting: new Set(), ended: false, failure: null };
      void thread.exited.then(() => {
        thread.ended = true;
        for (const done of thread.waiting) done();
        thread.waiting.clear();
      });
      this.threads.push(thread);
      ready.push(
        new Promise((resolve, reject) => {
          worker.on('message', (m: FromServing) => {
            if (m.t === 'ready') resolve();
            else this.heard(thread, m);
          });
          // A thread that ends before it listens fails the start; one that ends later, the process.
          void thread.exited.then((code) => {
            reject(new Error(`serving thread ${i} stopped before it listened: ${thread.failure ?? `exit code ${code}`}`));
            if (!this.stopping) this.died(i, thread, code);
          });
        }),
      );
      worker.on('error', (err) => (thread.failure = err.message));
    }
    await Promise.all(ready);
  }

  /** Hands every thread the new store, to take when the gate opens to it (threads/store-gate.ts); resolves once each has it. */
  async stage(store: Store): Promise<void> {
    const message = storeMessage(store);
    await Promise.all(this.threads.map((thread) => this.send(thread, { t: 'store', store: message }, 'staged')));
  }

  /** The gate is open: every thread takes the staged store, if no request made it do so already; resolves once each has swapped. */
  async commit(): Promise<void> {
    await Promise.all(this.threads.map((thread) => this.send(thread, { t: 'commit' }, 'swapped')));
  }

  /** Every thread lets go of the stores swapped out, as the main thread does (snapshot/release-dropped.ts). */
  release(): void {
    for (const { worker } of this.threads) worker.postMessage({ t: 'release' } satisfies ToServing);
  }

  keys(table: KeyTable): void {
    for (const { worker } of this.threads) worker.postMessage({ t: 'keys', data: table.data } satisfies ToServing);
  }

  /**
   * A renewed certificate: every thread's app for it takes its share of the
   * port over. Resolves once each thread has it, with what those that could
   * not take it said (each keeps the pair it had).
   */
  async tls(pair: TlsPair): Promise<string[]> {
    const checked = { cert: pair.cert, key: pair.key };
    const said = await Promise.all(this.threads.map((thread) => this.request<string | null>(thread, (id) => ({ t: 'tls', id, pair: checked }), null)));
    return said.flatMap((error, i) => (error === null ? [] : [`serving thread ${i + 1}: ${error}`]));
  }

  /** Accepting pauses or resumes in every thread with the main one, which counts the process's descriptors. */
  accept(paused: boolean): void {
    for (const { worker } of this.threads) worker.postMessage({ t: 'accept', paused } satisfies ToServing);
  }

  /** Every thread's own exposition. */
  metrics(): Promise<string[]> {
    return Promise.all(this.threads.map((thread) => this.request<string>(thread, (id) => ({ t: 'metrics', id }), '')));
  }

  /** Whether every thread's Redis limiter is up (each has a connection of its own). */
  async limiterUp(): Promise<boolean> {
    return (await Promise.all(this.threads.map((thread) => this.request<boolean>(thread, (id) => ({ t: 'limiter', id }), true)))).every(Boolean);
  }

  /** Asks a thread a question (`metrics`, `limiter`, `tls`) with the message `ask` makes of its id; `ended` is the answer of a thread that ends first (a stop under way). */
  private request<T>(thread: Thread, ask: (id: number) => ToServing, ended: T): Promise<T> {
    return new Promise<T>((resolve) => {
      if (thread.ended) return resolve(ended);
      const id = this.nextId++;
      const gone = () => {
        this.pending.delete(id);
        resolve(ended);
      };
      thread.waiting.add(gone);
      this.pending.set(id, (value) => {
        thread.waiting.delete(gone);
        resolve(value as T);
      });
      thread.worker.postMessage(ask(id));
    });
  }

  /** Drains every thread as the main one drains (held requests answered, bodies in flight finished), then ends them. */
  async stop(drainMs: number, limitMs: number): Promise<void> {
    this.stopping = true;
    for (const { worker } of this.threads) worker.postMessage({ t: 'stop', drainMs, limitMs } satisfies ToServing);
    await Promise.all(this.threads.map((t) => t.exited));
  }

  /**
   * Ends every thread at once, their connections closed: a process ending
   * with a thread whose app is still open is aborted by Node, with a dump
   * in place of a log line.
   */
  async kill(): Promise<void> {
    this.stopping = true;
    for (const { worker } of this.threads) worker.postMessage({ t: 'die' } satisfies ToServing);
    await Promise.race([Promise.all(this.threads.map((t) => t.exited)), new Promise((r) => setTimeout(r, DIE_WAIT_MS).unref())]);
  }

  private heard(thread: Thread, m: FromServing): void {
    if (m.t === 'failed') thread.failure = m.message;
    else if (m.t === 'metrics' || m.t === 'limiter' || m.t === 'tls') {
      this.pending.get(m.id)?.(m.t === 'metrics' ? m.text : m.t === 'limiter' ? m.up : m.error);
      this.pending.delete(m.id);
    } else if (m.t === 'ask') {
      const work = m.what === 'health' ? this.answers.health() : this.answers.metrics();
      work.then(
        (value) => thread.worker.postMessage({ t: 'answer', id: m.id, ok: true, value } satisfies ToServing),
        (err: unknown) => thread.worker.postMessage({ t: 'answer', id: m.id, ok: false, value: String(err) } satisfies ToServing),
      );
    }
  }

  private died(index: number, thread: Thread, code: number): void {
    if (this.dead) return;
    this.dead = true;
    const reason = `serving thread ${index} stopped: ${thread.failure ?? `exit code ${code}`}`;
    this.log.fatal({ event: 'thread_died', thread: index, reason }, `${reason}; the process exits, for its supervisor to start it again`);
    this.onDeath(reason);
  }

  /**
   * Sends `message` and waits for the reply of kind `reply`, or for the
   * thread's end (a stop under way). Nothing that outlives the reply holds
   * the message: a store's would stay alive with it.
   */
  private send(thread: Thread, message: ToServing, reply: FromServing['t']): Promise<void> {
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    const done = (): void => {
      thread.worker.off('message', listener);
      thread.waiting.delete(done);
      resolve();
    };
    const listener = (m: FromServing): void => {
      if (m.t === reply) done();
    };
    if (thread.ended) return Promise.resolve();
    thread.worker.on('message', listener);
    thread.waiting.add(done);
    thread.worker.postMessage(message);
    return promise;
  }
}
