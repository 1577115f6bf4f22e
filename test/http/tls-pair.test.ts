import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { withPairFiles } from '../../src/http/tls-pair.js';

/**
 * The checked pair as files for uWebSockets.js (http/tls-pair.ts): they
 * hold exactly the bytes handed over, readable by this user only, while the
 * app is made, and are gone the moment it is, whether making it worked or threw.
 */
const test = suite('the checked pair as files');
const pair = { cert: Buffer.from('-----BEGIN CERTIFICATE-----\ncert\n'), key: new Uint8Array(Buffer.from('-----BEGIN PRIVATE KEY-----\nkey\n')) };

test('the files hold the bytes handed over, 0600 in a folder of 0700, and are removed once used', () => {
  let seen: string[] = [];
  const made = withPairFiles(pair, (cert, key) => {
    seen = [cert, key];
    assert.equal(readFileSync(cert), Buffer.from(pair.cert));
    assert.equal(readFileSync(key), Buffer.from(pair.key));
    for (const f of [cert, key]) assert.is(statSync(f).mode & 0o777, 0o600, f);
    assert.is(statSync(dirname(key)).mode & 0o777, 0o700);
    return 'app';
  });
  assert.is(made, 'app');
  assert.ok(seen.length === 2 && !existsSync(dirname(seen[0])), 'the folder is gone');
});

test('a throw while the app is made removes them too, and goes on to the caller', () => {
  let folder = '';
  assert.throws(() =>
    withPairFiles(pair, (cert) => {
      folder = dirname(cert);
      throw new Error('App construction failed');
    }), /App construction failed/);
  assert.ok(folder !== '' && !existsSync(folder));
});

test.run();
