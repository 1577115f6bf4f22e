import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pairDigest, readCertificatePair } from '../../src/core/certificate.js';
import { TestAuthority } from '../../support/certificates.js';
import { tempDir } from '../helpers/server.js';

/**
 * A pair read and checked (core/certificate.ts) is known again by its digest
 * as the files are, whatever bytes they hold: text before a PEM block (such as
 * a friendly name that is not ASCII) must not make an unchanged pair look new
 * (the renewal would read it again after each change of either file).
 */
test('the digest of a checked pair is the digest of its files, text around the PEM blocks included; another pair differs', () => {
  const dir = tempDir();
  try {
    const authority = new TestAuthority(dir);
    const pair = authority.issue('named');
    const cert = join(dir, 'with-name.pem');
    writeFileSync(cert, Buffer.concat([Buffer.from('Bag Attributes\n    friendlyName: Zürich Ünïcode\n'), readFileSync(pair.cert)]));
    const read = readCertificatePair(cert, pair.key);
    assert.is(read.subject, 'CN=localhost');
    assert.is(pairDigest(cert, pair.key), read.digest);
    const other = authority.issue('other');
    assert.is.not(pairDigest(other.cert, other.key), read.digest);
    assert.is(pairDigest(join(dir, 'missing.pem'), pair.key), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
