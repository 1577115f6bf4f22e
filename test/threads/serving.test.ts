import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TYPES } from '../../src/core/vocabulary.js';
import { exitWithin, freePort, runCli, runCliSync, untilReady } from '../helpers/cli.js';
import { getFrom } from '../helpers/http-from.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { TEST_NOW_S, eventually, startTestServer, tempDir, testEngine, type TestServer } from '../helpers/server.js';

/**
 * Two serving threads in one process (docs/threads.md): connections spread
 * over both by the kernel, one store, exact limits whichever thread a request
 * lands on, every thread on the new store once a swap is done, held requests
 * answered on any thread, /health and /metrics for the whole process. Every
 * request here is on a connection of its own, so that both threads take some.
 */
const KEYS = {
  keys: [
    { key: 'free', name: 'free', limits: { per_window: null, daily: null, subnets: null } },
    { key: 'window', name: 'window', limits: { per_window: 2, window_s: 5, daily: null, subnets: null } },
    { key: 'daily', name: 'daily', limits: { per_window: null, daily: 50, subnets: null } },
    { key: 'subnets', name: 'subnets', limits: { per_window: null, daily: null, subnets: 3 } },
    { key: 'forwarded', name: 'forwarded', limits: { per_window: null, daily: null, subnets: 3 } },
  ],
};
const version = (seed: number, at: number) => encodeSnapshot(generateRecords({ records: 3000, seed, now: at }), at);

/** A GET on a connection of its own, from `from` (a loopback address: 127.x.0.1 is subnet x). */
const ask = (t: TestServer, query: string, from = '127.0.0.1', headers: Record<string, string> = {}) => getFrom(from, `${t.base}/api?${query}`, headers);

const valueIn = (text: string, series: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
};
const metric = async (t: TestServer, series: string): Promise<number> => valueIn(await (await t.get('/metrics')).text(), series);
/** Responses each thread answered so far. */
const byThread = async (t: TestServer): Promise<number[]> => {
  const text = await (await t.get('/metrics')).text();
  return [0, 1].map((i) => valueIn(text, `proxylist_thread_responses_total{thread="${i}"}`));
};

/** The status of each of `n` requests made at once. */
const statuses = async (n: number, one: (i: number) => Promise<{ status: number }>): Promise<number[]> => (await Promise.all(Array.from({ length: n }, (_, i) => one(i)))).map((r) => r.status);
const count = (xs: number[], x: number) => xs.filter((y) => y === x).length;

/** Threads share a port where the engine can bind so: uws, and the node engine from Node 22.12 on; elsewhere these are skipped, and one thread serves (the last test). */
const sharing = testEngine().sharesPorts;
const suiteOfTwo = suite<{ t: TestServer; clock: ManualClock }>('two serving threads');
const test = sharing ? suiteOfTwo : suiteOfTwo.skip;
suiteOfTwo.before(async (ctx) => {
  ctx.clock = new ManualClock(TEST_NOW_S * 1000, 1_000_000);
  ctx.t = await startTestServer({ snapshot: version(1, TEST_NOW_S), keys: KEYS, clock: ctx.clock, options: { threads: 2, trustProxy: ['127.0.0.1'], heldSliceMs: 0 } });
});
suiteOfTwo.after((ctx) => ctx.t?.close());

test('both threads answer; /health says 2 threads; /metrics counts the responses of both', async ({ t }) => {
  const health = (await (await t.get('/health')).json()) as { threads: number; status: string };
  assert.equal([health.status, health.threads], ['ok', 2]);
  const before = await byThread(t);
  const before200 = await metric(t, 'proxylist_http_requests_total{route="/api",status="200"}');
  assert.equal(count(await statuses(80, () => ask(t, 'key=free&count=1')), 200), 80);
  const after = await byThread(t);
  assert.ok(after[0] > before[0] && after[1] > before[1], `responses by thread went from ${before} to ${after}: both threads answered`);
  assert.is(await metric(t, 'proxylist_http_requests_total{route="/api",status="200"}'), before200 + 80, 'the sum over the threads');
});

test('2 per 5 s, exact: 40 requests at once, on both threads, let 2 through', async ({ t, clock }) => {
  const got = await statuses(40, () => ask(t, 'key=window&count=1'));
  assert.equal([count(got, 200), count(got, 429)], [2, 38]);
  clock.advance(5000);
  assert.equal(count(await statuses(10, () => ask(t, 'key=window&count=1')), 200), 2, 'the next window');
});

test('the daily limit, exact: 120 requests at once let 50 through; /usage counts them for the process', async ({ t }) => {
  const got = await statuses(120, () => ask(t, 'key=daily&count=1'));
  assert.equal([count(got, 200), count(got, 429)], [50, 70]);
  const usage = (await (await t.get('/usage')).json()) as { keys: Array<{ name: string | null; today: number }> };
  assert.is(usage.keys.find((k) => k.name === 'daily')?.today, 50);
});

test('the subnet limit, exact: 24 /16 subnets at once, 3 let in; from X-Forwarded-For too', async ({ t }) => {
  const subnets = Array.from({ length: 24 }, (_, i) => i + 10);
  const direct = await Promise.all(subnets.map((x) => ask(t, 'key=subnets&count=1', `127.${x}.0.1`).then((r) => [x, r.status] as const)));
  const inDirect = direct.filter(([, s]) => s === 200).map(([x]) => x);
  assert.is(inDirect.length, 3, `let in: ${inDirect}`);
  assert.is(count(direct.map(([, s]) => s), 403), 21);
  // Those let in stay in; the others stay out.
  for (const [x, s] of direct.slice(0, 6)) assert.is((await ask(t, 'key=subnets&count=1', `127.${x}.0.1`)).status, s, `subnet ${x} again`);
  const forwarded = await statuses(24, (i) => ask(t, 'key=forwarded&count=1', '127.0.0.1', { 'x-forwarded-for': `10.${i + 1}.0.7` }));
  assert.equal([count(forwarded, 200), count(forwarded, 403)], [3, 21]);
});

test('a swap is seen by every thread: once it is done, every answer is the new snapshot\'s', async ({ t }) => {
  const ok = t.server.feed.reloadsOk;
  writeFileAtomic(t.snapshot, version(2, TEST_NOW_S + 1));
  await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, 'the swap');
  const answers = await Promise.all(Array.from({ length: 60 }, () => ask(t, 'key=free&count=1')));
  assert.equal([...new Set(answers.map((a) => a.headers['snapshot-generated-at']))], [String(TEST_NOW_S + 1)]);
  const after = await byThread(t);
  assert.ok(after.every((n) => n > 0), `answers by thread: ${after}`);
});

test('swaps happen on every thread at one moment: new connections all the while, from 8 clients, across 10 swaps never see the snapshot go back', async ({ t }) => {
  const seen: Array<{ sent: number; got: number; at: number }> = [];
  let running = true;
  const loop = async () => {
    while (running) {
      const sent = performance.now();
      const a = await ask(t, 'key=free&count=1');
      seen.push({ sent, got: performance.now(), at: Number(a.headers['snapshot-generated-at']) });
    }
  };
  const loops = Array.from({ length: 8 }, loop);
  try {
    for (let v = 1; v <= 10; v++) {
      const ok = t.server.feed.reloadsOk;
      writeFileAtomic(t.snapshot, version(100 + v, TEST_NOW_S + 100 + v));
      await eventually(() => t.server.feed.reloadsOk === ok + 1, 10_000, `swap ${v}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  } finally {
    running = false;
    await Promise.all(loops);
  }
  // An answer whose request was sent after another's answer came never shows an older snapshot.
  const byGot = [...seen].sort((a, b) => a.got - b.got);
  let newestAnswered = 0;
  let backwards = 0;
  let j = 0;
  for (const r of [...seen].sort((a, b) => a.sent - b.sent)) {
    while (j < byGot.length && byGot[j].got < r.sent) newestAnswered = Math.max(newestAnswered, byGot[j++].at);
    if (r.at < newestAnswered) backwards++;
  }
  assert.is(backwards, 0, `${backwards} of ${seen.length} answers older than one already given`);
  assert.is(new Set(seen.map((s) => s.at)).size >= 10, true, `${new Set(seen.map((s) => s.at)).size} snapshots seen`);
});

test('held requests on both threads are answered by the next swap, with the new body; change sets too', async ({ t }) => {
  const q = 'key=free&get=json&pretty=0&time=99999&count=30';
  const first = await ask(t, q);
  const etag = first.headers.etag as string;
  const selection = 'key=free&get=json&pretty=0&time=99999';
  const cursor = (await ask(t, selection)).headers['list-cursor'] as string;
  const held = Array.from({ length: 16 }, () => ask(t, `${q}&wait=60`, '127.0.0.1', { 'if-none-match': etag }));
  const changes = Array.from({ length: 8 }, () => ask(t, `${selection}&since=${cursor}&wait=60`));
  await eventually(async () => (await metric(t, 'proxylist_requests_held')) === 24, 10_000, '24 requests held over the threads');
  writeFileAtomic(t.snapshot, version(3, TEST_NOW_S + 2));
  // Waits of 60 s, past the test's bounds: 200s are the swap's answers.
  const got = await Promise.all(held);
  const now = await ask(t, q);
  for (const g of got) {
    assert.is(g.status, 200);
    assert.is(g.body, now.body);
  }
  for (const c of await Promise.all(changes)) {
    assert.is(c.status, 200);
    assert.ok(Object.keys((JSON.parse(c.body) as { upsert: Record<string, unknown> }).upsert).length > 0, 'a change set with the new records');
  }
});

suiteOfTwo.run();

const processes = suite('a process of serving threads');
const twoThreads = sharing ? processes : processes.skip;

processes('bad values of --threads: one line, exit 2', () => {
  for (const bad of ['0', '257', 'two', '1.5', '-1']) {
    const r = runCliSync(['serve', '--snapshot', 'x', '--keys', 'y', '--threads', bad]);
    assert.is(r.status, 2, bad);
    assert.is(r.stderr.trim().split('\n').length, 1, `one line for ${bad}: ${r.stderr}`);
    assert.match(r.stderr, `--threads must be an integer from 1 to 256, not "${bad}"`);
  }
  const env = runCliSync(['serve', '--snapshot', 'x', '--keys', 'y'], { PROXYLIST_THREADS: '0' });
  assert.is(env.status, 2);
  assert.match(env.stderr, '--threads must be an integer from 1 to 256, not "0"');
});

twoThreads('a store swapped out goes back in every thread when the next load starts: no reload holds three', async () => {
  const dir = tempDir();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  const at = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, version(5, at));
  writeFileSync(keys, JSON.stringify(KEYS), { mode: 0o600 });
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--threads', '2', '--drain-s', '0', '--log-level', 'warn']);
  try {
    await untilReady(port);
    const base = `http://127.0.0.1:${port}`;
    const get = (path: string) => getFrom('127.0.0.1', `${base}${path}`);
    const metrics = async () => (await get('/metrics')).body;
    const reloads = async () => (JSON.parse((await get('/health')).body) as { reloads: { ok: number; failed: number } }).reloads;
    // Both threads answer from each store, selections and change sets included, before it is swapped out.
    const queries = Array.from({ length: 20 }, (_, i) => `/api?key=free&time=99999&type=${TYPES[i % 4]}&get=${i % 2 ? 'json' : 'txt'}`);
    const cursors = (await Promise.all(queries.map((q) => get(q)))).map((r) => r.headers['list-cursor'] as string);
    writeFileAtomic(snapshot, version(6, at + 1));
    await eventually(async () => (await reloads()).ok === 2, 10_000, 'the swap');
    const changes = await Promise.all(queries.map((q, i) => get(`${q}&since=${cursors[i]}`)));
    assert.equal([...new Set(changes.map((r) => r.status))], [200]);
    const byThread = (text: string) => [0, 1].map((i) => valueIn(text, `proxylist_thread_responses_total{thread="${i}"}`));
    assert.ok(byThread(await metrics()).every((n) => n > 0), 'both threads answered');
    // A load that fails still starts as every load does: each thread lets go of the store swapped out.
    writeFileAtomic(snapshot, Buffer.from([0xc1]));
    await eventually(async () => (await reloads()).failed === 1, 10_000, 'the rejection');
    await eventually(async () => valueIn(await metrics(), 'proxylist_stores_held') === 2, 10_000, 'one store in each of the two threads');
  } finally {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
});

twoThreads('a serving thread that dies ends the process: one line saying why, exit 1, no dump', async () => {
  const dir = tempDir();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  const trigger = join(dir, 'fail-now');
  writeFileAtomic(snapshot, version(4, Math.floor(Date.now() / 1000)));
  writeFileSync(keys, JSON.stringify(KEYS), { mode: 0o600 });
  // Serving thread 1 throws once the trigger file appears (a module it is started with); the main thread is left alone.
  const inThread = join(dir, 'plant.cjs');
  writeFileSync(inThread, `const { workerData } = require('node:worker_threads'); const { existsSync } = require('node:fs');
if (workerData && workerData.index === 1) { const t = setInterval(() => { if (existsSync(${JSON.stringify(trigger)})) { clearInterval(t); throw new Error('planted failure in a serving thread'); } }, 20); }`);
  const inMain = join(dir, 'plant.mjs');
  writeFileSync(inMain, `import wt from 'node:worker_threads'; import { syncBuiltinESMExports } from 'node:module';
const Base = wt.Worker;
wt.Worker = class extends Base { constructor(file, o = {}) { super(file, o.workerData && o.workerData.index !== undefined ? { ...o, execArgv: [...(o.execArgv ?? process.execArgv), '--require', ${JSON.stringify(inThread)}] } : o); } };
syncBuiltinESMExports();`);
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--threads', '2'], { NODE_OPTIONS: `--import=${inMain}` });
  await untilReady(port);
  assert.match(child.stdout(), '"threads":2');
  writeFileSync(trigger, '');
  assert.is(await exitWithin(child, 15_000), 1);
  const died = child.stdout().split('\n').filter((l) => l.includes('"event":"thread_died"'));
  assert.is(died.length, 1, child.stdout());
  assert.match(died[0], 'planted failure in a serving thread');
  assert.not.match(child.stderr(), /Assertion failed|Native stack trace|Aborted/, 'no dump from Node');
});

processes('--threads 2 where the engine cannot share a port: one thread serves, and the start says so', async () => {
  const dir = tempDir();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  writeFileAtomic(snapshot, version(4, Math.floor(Date.now() / 1000)));
  writeFileSync(keys, JSON.stringify(KEYS), { mode: 0o600 });
  const port = await freePort();
  const child = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', port, '--host', '127.0.0.1', '--threads', '2', '--drain-s', '0']);
  try {
    await untilReady(port);
    const health = JSON.parse((await getFrom('127.0.0.1', `http://127.0.0.1:${port}/health`)).body) as { threads: number; engine: string };
    assert.is(health.threads, sharing ? 2 : 1);
    assert.is(child.stdout().includes('"event":"threads_unavailable"'), !sharing, child.stdout());
  } finally {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
});

processes.run();
