import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BuildThread } from '../../src/snapshot/build-thread.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { TEST_NOW_S, tempDir } from '../helpers/server.js';

const dir = tempDir();
const snapshotOf = (name: string, records: number, seed: number): { file: string; rows: number } => {
  const bytes = encodeSnapshot(generateRecords({ records, seed, now: TEST_NOW_S }), TEST_NOW_S);
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return { file, rows: NaiveEngine.fromFile(bytes).records.length };
};
const small = snapshotOf('small.msgpack', 300, 1);
const large = snapshotOf('large.msgpack', 20_000, 2);
const broken = join(dir, 'broken.msgpack');
writeFileSync(broken, Buffer.from([0x91, 0x01]));

const test = suite('the build thread');

test('one thread builds load after load, a rejected file between them included', async () => {
  const thread = new BuildThread();
  try {
    assert.is((await thread.load(large.file)).columns.rows, large.rows);
    await thread.load(broken).then(
      () => assert.unreachable('a broken file is rejected'),
      (err: Error & { code?: string }) => assert.match(String(err.code), /^E_SNAPSHOT_/),
    );
    assert.is((await thread.load(small.file)).columns.rows, small.rows);
  } finally {
    await thread.close();
  }
});

test('loads asked for at once are built one after the other, each from its own file', async () => {
  const thread = new BuildThread();
  try {
    const results = await Promise.all([thread.load(large.file), thread.load(small.file), thread.load(large.file)]);
    assert.equal(results.map((r) => r.columns.rows), [large.rows, small.rows, large.rows]);
  } finally {
    await thread.close();
  }
});

test('a closed thread refuses loads with one line', async () => {
  const thread = new BuildThread();
  await thread.load(small.file);
  await thread.close();
  await thread.load(small.file).then(
    () => assert.unreachable('closed'),
    (err: Error) => assert.is(err.message, 'the snapshot feed is closed'),
  );
});

test('an idle thread does not keep the process alive', () => {
  const script = `import { BuildThread } from ${JSON.stringify(new URL('../../src/snapshot/build-thread.js', import.meta.url).href)};
const rows = (await new BuildThread().load(${JSON.stringify(small.file)})).columns.rows;
process.stdout.write(String(rows));`;
  const file = join(dir, 'load-once.mjs');
  writeFileSync(file, script);
  const out = execFileSync(process.execPath, [file], { timeout: 20_000 }).toString();
  assert.is(out, String(small.rows));
});

test.run();
