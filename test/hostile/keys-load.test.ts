import { execFileSync } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TEST_KEY, eventually, startTestServer, tempDir } from '../helpers/server.js';
import { version } from '../helpers/snapshots.js';

/**
 * A keys file of half a million keys (48 MB) is read on a thread of its own
 * (docs/operations.md, Keys): the requests of the keys in force are
 * answered all the while, and the new keys come into force whole.
 */
const KEYS = 500_000;

/** The keys file: the test key and half a million others by hash, each with a name and limits. */
function bigKeysFile(): string {
  const parts = [`{"keys":[{"key":"${TEST_KEY}","limits":{"per_window":null,"daily":null,"subnets":null}}`];
  for (let i = 0; i < KEYS; i++) parts.push(`,{"sha256":"${i.toString(16).padStart(64, '0')}","name":"customer-${i}","limits":{"per_window":10,"window_s":1,"daily":100000,"subnets":20}}`);
  parts.push(']}');
  return parts.join('');
}

test('a half-million-key file loads while small requests are answered; the keys come into force whole', async () => {
  const t = await startTestServer({ snapshot: version(1) });
  const dir = tempDir();
  try {
    const text = bigKeysFile();
    assert.ok(text.length > 45_000_000, `${text.length} bytes`);
    const staged = join(dir, 'keys.json');
    writeFileSync(staged, text);
    // What reading the file on the event loop would stop it for, measured in a process of its own (its garbage not in this one).
    const parseMs = Number(execFileSync(process.execPath, ['-e', `const t = performance.now(); JSON.parse(require('fs').readFileSync(${JSON.stringify(staged)}, 'utf8')); console.log(performance.now() - t)`], { encoding: 'utf8' }));
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
    // A reload waits for idle cores, then reads at a tenth of a core: on cores kept busy (this test's own client, and whatever else the machine runs) that takes up to half a minute.
    await eventually(async () => t.server.keys.table.size === KEYS + 1, 120_000, 'the new keys in force');
    const loadMs = performance.now() - published;
    loaded = true;
    await client;
    assert.ok(answered > 50, `${answered} requests answered during the ${Math.round(loadMs)} ms of the load`);
    // On the event loop, the wait between two answers would be at least the parse.
    assert.ok(longestGapMs < parseMs / 2, `the longest wait between two answers was ${Math.round(longestGapMs)} ms, where the file alone takes ${Math.round(parseMs)} ms to parse`);
    const entry = t.server.keys.table.get((123_456).toString(16).padStart(64, '0'));
    assert.equal([entry?.name, entry?.limits.daily, entry?.limits.perWindow], ['customer-123456', 100000, 10]);
    assert.is((await t.api('count=1')).status, 200, 'the key of the new file that the test uses');
  } finally {
    await t.close();
  }
});

test.run();
