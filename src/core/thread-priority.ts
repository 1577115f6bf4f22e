import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * The event loop comes first: on Linux a worker thread lowers its own
 * scheduling priority (nice +5, by its thread id), so when it and a serving
 * thread compete for a core, requests get most of it and the work still
 * moves on. Elsewhere it runs as is.
 */
export function yieldToEventLoop(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (tid > 0) setPriority(tid, 5);
  } catch {
    // Not Linux, or not allowed: normal priority.
  }
}
