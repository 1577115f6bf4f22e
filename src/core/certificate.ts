import { X509Certificate, createHash, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CodedError } from './errors.js';

/** A certificate and its private key as read from their files, checked to parse and to match. */
export interface CertificatePair {
  certFile: string;
  keyFile: string;
  /** The leaf certificate's subject, one line (`CN=api.example.com`). */
  subject: string;
  notAfterMs: number;
  /**
   * What identifies the pair's bytes, to tell a rewrite from a touch. A
   * digest of both files: it reveals nothing of the key and is never logged.
   */
  digest: string;
  /**
   * The bytes that were checked: what every thread's app is made from, never
   * the files read again, which may have changed since (docs/operations.md, HTTPS).
   */
  cert: Uint8Array;
  key: Uint8Array;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/** What identifies the bytes of a pair: the same for the same files, whatever they hold. */
const digestOf = (cert: Buffer, key: Buffer): string => createHash('sha256').update(cert).update('\0').update(key).digest('hex');

/** A file's bytes, or a one-line error naming it; never any of its content. */
function readBytes(what: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'does not exist' : e.code === 'EACCES' ? 'cannot be read by this user' : e.code === 'EISDIR' ? 'is a folder' : `cannot be read (${e.code ?? 'error'})`;
    throw new CodedError('E_TLS', `TLS ${what} ${file} ${why}`);
  }
}

/**
 * Reads and checks a pair (docs/operations.md, HTTPS): both files PEM, the certificate
 * parses, the key parses unencrypted and belongs to the certificate. Errors
 * name the file and never quote it, so no part of a key reaches a log.
 */
export function readCertificatePair(certFile: string, keyFile: string): CertificatePair {
  const certBytes = readBytes('certificate', certFile);
  const keyBytes = readBytes('key', keyFile);
  const certText = certBytes.toString('latin1');
  const keyText = keyBytes.toString('latin1');
  if (!CERTIFICATE_BLOCK.test(certText)) throw new CodedError('E_TLS', `TLS certificate ${certFile} is not PEM: no BEGIN CERTIFICATE block`);
  if (!KEY_BLOCK.test(keyText)) throw new CodedError('E_TLS', `TLS key ${keyFile} is not a PEM private key: no BEGIN PRIVATE KEY block`);
  if (keyText.includes('ENCRYPTED')) throw new CodedError('E_TLS', `TLS key ${keyFile} is encrypted: give the key without a passphrase, readable only by the service's user`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certText);
  } catch {
    throw new CodedError('E_TLS', `TLS certificate ${certFile} does not parse as an X.509 certificate`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyText);
  } catch {
    throw new CodedError('E_TLS', `TLS key ${keyFile} does not parse as a private key`);
  }
  if (!cert.checkPrivateKey(key)) throw new CodedError('E_TLS', `TLS key ${keyFile} does not match the certificate ${certFile}`);
  return {
    certFile,
    keyFile,
    subject: cert.subject.replace(/\n/g, ', '),
    notAfterMs: Date.parse(cert.validTo),
    digest: digestOf(certBytes, keyBytes),
    cert: certBytes,
    key: keyBytes,
  };
}

/** The digest of the pair as the files are now (null if one cannot be read), to see whether they changed. */
export function pairDigest(certFile: string, keyFile: string): string | null {
  try {
    return digestOf(readFileSync(certFile), readFileSync(keyFile));
  } catch {
    return null;
  }
}
