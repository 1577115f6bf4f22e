import { readFileSync } from 'node:fs';
import { readRaw, type ReadResponse } from './http-read.js';
import { testEngine } from './server.js';

/** net.ipv4.tcp_migrate_req: the kernel moves connections queued on a closing socket to another on the same port. */
function migratesQueuedConnections(): boolean {
  try {
    return readFileSync('/proc/sys/net/ipv4/tcp_migrate_req', 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * A failure that a new connection may meet while a certificate is renewed:
 * on the uws engine, a connection the kernel queued on the old app's socket
 * in the instant it stops listening is reset, unless the kernel moves it to
 * the new one (docs/operations.md, HTTPS). The node engine renews in place,
 * so nothing is reset there.
 */
export function isRenewalReset(err: Error): boolean {
  // Over TLS the reset may come during the handshake, which Node words without the code.
  const reset = (err as NodeJS.ErrnoException).code === 'ECONNRESET' || /ECONNRESET|socket hang up|disconnected before secure TLS/.test(err.message);
  return testEngine().name === 'uws' && !migratesQueuedConnections() && reset;
}

/** `readRaw` while a renewal may be under way: null for a renewal's reset, any other failure thrown. */
export async function readAcrossRenewal(...args: Parameters<typeof readRaw>): Promise<ReadResponse | null> {
  try {
    return await readRaw(...args);
  } catch (err) {
    if (err instanceof Error && isRenewalReset(err)) return null;
    throw err;
  }
}
