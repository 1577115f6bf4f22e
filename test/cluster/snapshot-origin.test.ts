import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { systemClock } from '../../src/core/clock.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { StaticOrigin } from '../helpers/nginx.js';
import { eventually, startTestServer, type TestServer } from '../helpers/server.js';

/** A snapshot at an http origin (docs/several-instances.md), served by a real nginx. */
const now = Math.floor(Date.now() / 1000);
const version = (v: number, records = 2000) => encodeSnapshot(generateRecords({ records, seed: 300 + v, now }), now + v);

interface Health { status: string; snapshot: { generated_at: string; records: number } | null; origin: { url: string; downloads: number; not_modified: number; last_error: string | null } }
const health = async (t: TestServer) => (await (await t.get('/health')).json()) as Health;
const generated = async (t: TestServer) => Date.parse((await health(t)).snapshot?.generated_at ?? '') / 1000;

const test = suite<{ origin: StaticOrigin; t: TestServer }>('a snapshot from an http origin');
test.before(async (ctx) => {
  ctx.origin = await StaticOrigin.start();
  writeFileAtomic(join(ctx.origin.root, 'snapshot.msgpack'), version(0));
  ctx.t = await startTestServer({ snapshot: null, clock: systemClock, options: { snapshot: ctx.origin.url('snapshot.msgpack'), snapshotPollS: 1 } });
});
test.after(async (ctx) => {
  await ctx.t.close();
  await ctx.origin.close();
});

test('loaded, then polled with conditional GETs that nginx answers 304', async ({ origin, t }) => {
  await eventually(async () => (await health(t)).status === 'ok', 10_000, 'the first download loaded');
  assert.is(await generated(t), now);
  assert.is((await t.api('count=3')).status, 200);
  await eventually(() => origin.statuses('snapshot.msgpack').filter((s) => s === 304).length >= 2, 10_000, 'two 304s');
  assert.is(origin.statuses('snapshot.msgpack')[0], 200);
  const h = await health(t);
  assert.is(h.origin.downloads, 1);
  assert.is(h.origin.last_error, null);
});

test('an origin that sends neither ETag nor Last-Modified: the same bytes are fetched again, but not loaded again; new bytes are', async ({ origin }) => {
  const bare = join(origin.root, 'bare');
  mkdirSync(bare, { recursive: true });
  writeFileAtomic(join(bare, 'snapshot.msgpack'), version(5));
  const t = await startTestServer({ snapshot: null, clock: systemClock, options: { snapshot: origin.url('bare/snapshot.msgpack'), snapshotPollS: 1 } });
  try {
    await eventually(async () => (await health(t)).status === 'ok', 10_000, 'the first download loaded');
    const probe = await fetch(origin.url('bare/snapshot.msgpack'));
    assert.is(probe.headers.get('etag'), null);
    assert.is(probe.headers.get('last-modified'), null);
    await probe.arrayBuffer();
    await eventually(async () => (await health(t)).origin.not_modified >= 2, 8000, 'two polls that found the same bytes');
    assert.equal([...new Set(origin.statuses('bare/snapshot.msgpack'))], [200], 'every poll fetched the file whole');
    const h = (await (await t.get('/health')).json()) as Health & { reloads: { ok: number } };
    assert.is(h.origin.downloads, 1, 'one download put in place');
    assert.is(h.reloads.ok, 1, 'loaded once');
    writeFileAtomic(join(bare, 'snapshot.msgpack'), version(6));
    await eventually(async () => (await generated(t)) === now + 6, 10_000, 'the new bytes served');
  } finally {
    await t.close();
  }
});

test('a new file at the origin is served after two polls at most: the one under way, and the next', async ({ origin, t }) => {
  const polls = async () => {
    const o = (await health(t)).origin;
    return o.downloads + o.not_modified;
  };
  const before = await polls();
  writeFileAtomic(join(origin.root, 'snapshot.msgpack'), version(1));
  await eventually(async () => (await generated(t)) === now + 1, 10_000, 'version 1 served');
  const took = (await polls()) - before;
  assert.ok(took >= 1 && took <= 2, `served after ${took} polls`);
});

test('the origin answering 500 leaves the current snapshot served, and /health shows why', async ({ origin, t }) => {
  writeFileSync(join(origin.root, 'fail'), '');
  writeFileAtomic(join(origin.root, 'snapshot.msgpack'), version(2));
  await eventually(async () => /answered 500/.test((await health(t)).origin.last_error ?? ''), 10_000, 'the error shown');
  assert.is(await generated(t), now + 1);
  assert.is((await t.api('count=3')).status, 200);
  rmSync(join(origin.root, 'fail'));
  await eventually(async () => (await generated(t)) === now + 2, 10_000, 'version 2 once the origin answers again');
  assert.is((await health(t)).origin.last_error, null);
});

test('a download cut short leaves the current snapshot served', async ({ origin, t }) => {
  writeFileSync(join(origin.root, 'slow'), '');
  writeFileAtomic(join(origin.root, 'snapshot.msgpack'), version(3, 20_000));
  // The download runs at 20 KB/s: nginx is killed in the middle of it.
  await new Promise((r) => setTimeout(r, 2500));
  await origin.stop('SIGKILL');
  await eventually(async () => (await health(t)).origin.last_error !== null, 10_000, 'the cut download noticed');
  assert.is(await generated(t), now + 2);
  assert.is((await t.api('count=3')).status, 200);
  assert.is((await health(t)).status, 'ok');
  rmSync(join(origin.root, 'slow'));
  await origin.run();
  await eventually(async () => (await generated(t)) === now + 3, 10_000, 'version 3 once the origin is back');
});

test.run();
