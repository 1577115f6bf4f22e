/** A thread of the shared limiter's test: admits a key `count` times on the shared table, and says how many it was let through. */
import { parentPort, workerData } from 'node:worker_threads';
import { MemoryLimiter } from '../../src/access/limiter.js';
import type { KeyEntry } from '../../src/access/keys.js';

const { shared, key, count, subnets, nowMs, monoMs } = workerData as { shared: SharedArrayBuffer; key: KeyEntry; count: number; subnets: number[]; nowMs: number; monoMs: number };
const limiter = new MemoryLimiter(shared);
// Every thread starts at once, so that they contend for the lock.
const go = new Int32Array(workerData.go as SharedArrayBuffer);
Atomics.wait(go, 0, 0);
let accepted = 0;
const acceptedSubnets: number[] = [];
for (let i = 0; i < count; i++) {
  const subnet = subnets[i % subnets.length];
  if (limiter.admit(key, subnet, nowMs, monoMs + i * 1e-6).ok) {
    accepted++;
    if (!acceptedSubnets.includes(subnet)) acceptedSubnets.push(subnet);
  }
}
parentPort!.postMessage({ accepted, acceptedSubnets });
