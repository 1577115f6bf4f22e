import { Worker } from 'node:worker_threads';
import { CodedError } from '../core/errors.js';
import type { KeysData } from './keys.js';

/**
 * How a keys file is read. `first`: at start, when no keys are in force to
 * answer with, as fast as background work goes. `idle`: a reload, only on
 * cores nothing else wants (core/thread-priority.ts). `gentle`: a reload in
 * short slices with long pauses, a tenth of a core.
 */
export type KeysPace = 'first' | 'idle' | 'gentle';

/** What the reading thread is asked. */
export interface KeysRead {
  path: string;
  pace: KeysPace;
}

/** The keys read, whether on idle cores only, and how many times the file was read (2: idle cores did not come in time). */
export interface KeysReadDone {
  data: KeysData;
  idle: boolean;
  reads: number;
}

type FromThread = { idle: boolean } | { ok: true; data: KeysData; idle: boolean } | { ok: false; message: string };

/**
 * How long a reload waits for idle cores: cores that stay busy (a crowd
 * that saturates every serving thread, or another process) must not keep a
 * new or revoked key out of force for long. The reload then starts again,
 * gently.
 */
export const IDLE_READ_LIMIT_MS = 10_000;

/**
 * Reads and checks a keys file on a thread of its own, which ends with the
 * read: its memory (the parsed JSON of the whole file) goes with it. Rejects
 * with the one-line E_KEYS_INVALID of a file that is wrong. `reload`: keys
 * are in force and requests are answered meanwhile, so the read takes only
 * idle cores for up to `idleLimitMs`, then a tenth of a core.
 */
export async function readKeysOffThread(path: string, reload = false, idleLimitMs = IDLE_READ_LIMIT_MS): Promise<KeysReadDone> {
  if (!reload) return { ...(await readOnce({ path, pace: 'first' }, Infinity))!, reads: 1 };
  const idle = await readOnce({ path, pace: 'idle' }, idleLimitMs);
  if (idle) return { ...idle, reads: 1 };
  return { ...(await readOnce({ path, pace: 'gentle' }, Infinity))!, reads: 2 };
}

/**
 * One read; null when it did not end within `limitMs` of taking the idle
 * policy (the thread is stopped). A thread that could not take that policy
 * reads gently from the start, without a limit: what it reads is not
 * thrown away.
 */
function readOnce(read: KeysRead, limitMs: number): Promise<Omit<KeysReadDone, 'reads'> | null> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./keys-worker.js', import.meta.url));
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    let timer: NodeJS.Timeout | undefined;
    worker.on('message', (m: FromThread) => {
      if (!('ok' in m)) {
        // The thread, not the wait, keeps a process that is ending alive.
        if (m.idle && Number.isFinite(limitMs)) timer = setTimeout(() => settle(() => resolve(null)), limitMs).unref();
        return;
      }
      settle(() => (m.ok ? resolve({ data: m.data, idle: m.idle }) : reject(new CodedError('E_KEYS_INVALID', m.message))));
    });
    // The thread itself failed: out of memory on a file too large for this host.
    worker.once('error', (err) => settle(() => reject(new CodedError('E_KEYS_INVALID', `keys file could not be read: ${err.message}`))));
    worker.once('exit', (code) => settle(() => reject(new CodedError('E_KEYS_INVALID', `keys file could not be read: the reading thread stopped (${code})`))));
    worker.postMessage(read);
  });
}
