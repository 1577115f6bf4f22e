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
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/** A file's text, or a one-line error naming it; never any of its content. */
function readText(what: string, file: string): string {
  try {
    return readFileSync(file, 'latin1');
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
  const certText = readText('certificate', certFile);
  const keyText = readText('key', keyFile);
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
    digest: createHash('sha256').update(certText).update('\0').update(keyText).digest('hex'),
  };
}

/** The digest of the pair as the files are now (null if one cannot be read), to see whether they changed. */
export function pairDigest(certFile: string, keyFile: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(certFile, 'latin1')).update('\0').update(readFileSync(keyFile, 'latin1')).digest('hex');
  } catch {
    return null;
  }
}
