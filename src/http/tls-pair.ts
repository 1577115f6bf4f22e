import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** Memory-backed where the system has it, so that a key written here never reaches a disk. */
function privateRoot(): string {
  try {
    if (existsSync('/dev/shm') && statSync('/dev/shm').isDirectory()) return '/dev/shm';
  } catch {
    // the system's temporary folder, below
  }
  return tmpdir();
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
  const dir = mkdtempSync(join(privateRoot(), 'proxylist-tls-'));
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
