import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate (with its chain) and its key in PEM: the bytes that were checked (core/certificate.ts). */
export interface TlsPair {
  cert: Uint8Array;
  key: Uint8Array;
}

/**
 * What TLS 1.2 offers (docs/operations.md, HTTPS): ECDHE key exchange with
 * AEAD ciphers only, in the order of Mozilla's "intermediate" profile. TLS
 * 1.3 has only such suites, and TLS 1.1 and older are refused by
 * uWebSockets.js itself. Names as BoringSSL, which uWebSockets.js is built
 * with, spells them.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * A folder of this process's own for the pair: in /dev/shm, memory-backed,
 * where it can be made there (a key written there never reaches a disk),
 * else in the system's temporary folder.
 */
function privateFolder(): string {
  try {
    return mkdtempSync('/dev/shm/proxylist-tls-');
  } catch {
    return mkdtempSync(join(tmpdir(), 'proxylist-tls-'));
  }
}

/**
 * Runs `use` with files that hold `pair`. uWebSockets.js reads a
 * certificate and key only from files, and only while an app is made; the
 * operator's files may have changed since they were checked (an ACME client
 * writes one, then the other), so they are never read again. The checked
 * bytes go to a folder of this process's own (mode 0700, files 0600), which
 * is removed as soon as `use` returns or throws.
 */
export function withPairFiles<T>(pair: TlsPair, use: (certFile: string, keyFile: string) => T): T {
  const dir = privateFolder();
  try {
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    writeFileSync(certFile, pair.cert, { mode: 0o600, flag: 'wx' });
    writeFileSync(keyFile, pair.key, { mode: 0o600, flag: 'wx' });
    return use(certFile, keyFile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
