import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FileFollower } from '../../src/core/follow-file.js';
import { eventually, tempDir } from '../helpers/server.js';

/** FileFollower: each version of a file replaced by rename or rewritten in place is loaded once, never two loads at once. */
const test = suite('follow a file');

test('renames in bursts load the last version; a missing file is reported; loads never overlap', async () => {
  const dir = tempDir();
  const path = join(dir, 'f.txt');
  const loaded: string[] = [];
  let running = 0;
  let overlapped = false;
  let missing = 0;
  const follower = new FileFollower(path, async (p) => {
    running++;
    if (running > 1) overlapped = true;
    loaded.push((await import('node:fs')).readFileSync(p, 'utf8'));
    await new Promise((r) => setTimeout(r, 30));
    running--;
  }, () => missing++, { debounceMs: 20, pollMs: 200 });
  try {
    writeFileSync(path, 'v1');
    await follower.start();
    assert.equal(loaded, ['v1']);
    // Five renames 5 ms apart: at most a few loads, the last one of v6.
    for (let v = 2; v <= 6; v++) {
      writeFileSync(join(dir, 'tmp'), `v${v}`);
      renameSync(join(dir, 'tmp'), path);
      await new Promise((r) => setTimeout(r, 5));
    }
    await eventually(() => loaded.at(-1) === 'v6', 10_000, 'v6 loaded');
    assert.ok(loaded.length <= 4, `${loaded.length} loads for a burst of 5`);
    writeFileSync(path, 'v7'); // in place
    await eventually(() => loaded.at(-1) === 'v7', 10_000, 'v7 loaded');
    rmSync(path);
    await eventually(() => missing > 0, 10_000, 'missing reported');
    assert.not.ok(overlapped, 'two loads ran at once');
  } finally {
    await follower.close();
  }
});

test.run();
