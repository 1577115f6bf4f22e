import { spawnSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** This thread's id on Linux, or 0 elsewhere. */
function threadId(): number {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop()) || 0;
  } catch {
    return 0;
  }
}

/**
 * The event loop comes first: on Linux a worker thread lowers its own
 * scheduling priority (nice +5, by its thread id), so when it and a serving
 * thread compete for a core, requests get most of it and the work still
 * moves on. Elsewhere it runs as is.
 */
export function yieldToEventLoop(): void {
  const tid = threadId();
  try {
    if (tid > 0) setPriority(tid, 5);
  } catch {
    // Not allowed: normal priority.
  }
}

/**
 * Work only on a core that nothing else wants: the thread takes Linux's
 * idle scheduling policy (through util-linux's `chrt`, which every Debian
 * and Ubuntu has), so a serving thread that wakes takes the core from it at
 * once, where at nice +5 it waits up to the scheduler's slice. No thread can
 * leave that policy again without privileges: whoever asks for it bounds
 * the wait itself (access/keys-thread.ts). True when it took effect.
 */
export function onlyWhenIdle(): boolean {
  const tid = threadId();
  if (tid === 0) return false;
  const set = spawnSync('chrt', ['--idle', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 5000 });
  return set.status === 0;
}
