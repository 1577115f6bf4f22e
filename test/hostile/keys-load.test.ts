import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TEST_KEY, eventually, startTestServer, tempDir } from '../helpers/server.js';
import { version } from '../helpers/snapshots.js';

/**
 * A keys file of 1.5 million keys (143 MB) is read on a thread of its own
 * (docs/operations.md, Keys): the requests of the keys in force are
 * answered all the while, and the new keys come into force whole.
 */
const KEYS = 1_500_000;

/** The keys file: the test key and 1.5 million others by hash, each with a name and limits. */
function bigKeysFile(): string {
  const parts = [`{"keys":[{"key":"${TEST_KEY}","limits":{"per_window":null,"daily":null,"subnets":null}}`];
  for (let i = 0; i < KEYS; i++) parts.push(`,{"sha256":"${i.toString(16).padStart(64, '0')}","name":"customer-${i}","limits":{"per_window":10,"window_s":1,"daily":100000,"subnets":20}}`);
  parts.push(']}');
  return parts.join('');
}

test('a 1.5-million-key file loads while small requests are answered; the keys come into force whole', async () => {
  const t = await startTestServer({ snapshot: version(1) });
  const dir = tempDir();
  try {
    const text = bigKeysFile();
    assert.ok(text.length > 140_000_000, `${text.length} bytes`);
    const staged = join(dir, 'keys.json');
    writeFileSync(staged, text);
    let loaded = false;
    let answered = 0;
    let longestGapMs = 0;
    const client = (async () => {
      let last = performance.now();
      while (!loaded) {
        const res = await t.api('count=1');
        assert.is(res.status, 200);
        await res.arrayBuffer();
        const now = performance.now();
        longestGapMs = Math.max(longestGapMs, now - last);
        last = now;
        answered++;
      }
    })();
    const published = performance.now();
    // Renamed into place, as an editor or a deployment replaces the file.
    renameSync(staged, t.keys);
    // A reload waits for idle cores, then reads at a tenth of a core: on cores kept busy (this test's own client, and whatever else the machine runs) that takes up to a minute.
    await eventually(async () => t.server.keys.table.size === KEYS + 1, 120_000, 'the new keys in force');
    const loadMs = performance.now() - published;
    loaded = true;
    await client;
    assert.ok(answered > 50, `${answered} requests answered during the ${Math.round(loadMs)} ms of the load`);
    // JSON.parse of the file alone takes seconds: on the event loop, the longest wait between two answers would be most of the load.
    assert.ok(longestGapMs < loadMs / 4, `the longest wait between two answers was ${Math.round(longestGapMs)} ms, in a load of ${Math.round(loadMs)} ms`);
    const entry = t.server.keys.table.get((123_456).toString(16).padStart(64, '0'));
    assert.equal([entry?.name, entry?.limits.daily, entry?.limits.perWindow], ['customer-123456', 100000, 10]);
    assert.is((await t.api('count=1')).status, 200, 'the key of the new file that the test uses');
  } finally {
    await t.close();
  }
});

test.run();
