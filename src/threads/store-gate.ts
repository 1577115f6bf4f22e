import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import type { Store } from '../store/store.js';

/** What the main thread's feed says of its loads, which a serving thread does not see. */
type LoadCounts = Pick<StoreFeed, 'reloadsOk' | 'reloadsFailed' | 'lastError'>;

/** A gate: the generation of the newest store that every thread has staged (0: none). */
export const newStoreGate = (): SharedArrayBuffer => new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);

/**
 * The store a thread answers from, swapped in every thread at one moment
 * (docs/threads.md). A new store is first staged in every thread; the main
 * thread then opens the gate, a generation in memory that every thread
 * shares, and each thread takes the staged store at its next read of
 * `current`. So once any thread has answered from a store, no request that
 * starts later, on any thread, answers from an older one: a client whose
 * connections land on different threads never sees its list go back.
 */
export class GatedStores implements StoreFeed {
  private served: Store | null = null;
  private staged: Store | null = null;
  private readonly gate: Int32Array;
  private readonly listeners: Array<(store: Store) => void | Promise<void>> = [];
  /** The swap listeners of the last store taken, run or running. */
  private swapped: Promise<void> = Promise.resolve();
  private taken = 0;

  /** `counts`: the main thread's feed, whose loads these are; a serving thread counts the stores it takes. */
  constructor(gate: SharedArrayBuffer, private readonly counts: LoadCounts | null = null) {
    this.gate = new Int32Array(gate);
  }

  get current(): Store | null {
    const staged = this.staged;
    // Listeners (cache, selections, held requests) run after this request: what they clear is keyed by generation, so nothing stale is served meanwhile.
    if (staged !== null && Atomics.load(this.gate, 0) >= staged.source.generation) this.take(staged, true);
    return this.served;
  }

  get reloadsOk(): number {
    return this.counts?.reloadsOk ?? this.taken;
  }

  get reloadsFailed(): number {
    return this.counts?.reloadsFailed ?? 0;
  }

  get lastError(): string | null {
    return this.counts?.lastError ?? null;
  }

  onSwap(listener: (store: Store) => void | Promise<void>): void {
    this.listeners.push(listener);
  }

  /** `store` is taken once the gate opens to it. */
  stage(store: Store): void {
    this.staged = store;
  }

  /** Opens the gate to the store of `generation`, for every thread at once: the main thread's, once every thread has staged it. */
  open(generation: number): void {
    Atomics.store(this.gate, 0, generation);
  }

  /** Takes the staged store if the gate is open to it; resolves once the swap listeners of the store taken have run. */
  commit(): Promise<void> {
    const staged = this.staged;
    if (staged !== null && Atomics.load(this.gate, 0) >= staged.source.generation) this.take(staged, false);
    return this.swapped;
  }

  private take(store: Store, later: boolean): void {
    this.served = store;
    this.staged = null;
    this.taken++;
    const run = async (): Promise<void> => {
      await Promise.all(this.listeners.map((listener) => listener(store)));
    };
    this.swapped = later ? new Promise<void>((resolve, reject) => setImmediate(() => run().then(resolve, reject))) : run();
  }
}
