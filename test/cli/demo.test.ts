import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { freePort, runCliSync, stopGroup } from '../helpers/cli.js';
import { eventually } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const test = suite('npm start');

test('answers a request for its printed key within 10 s of starting', async () => {
  const port = await freePort();
  const started = Date.now();
  // Its own process group, so the whole tree (npm, sh, node) can be stopped.
  const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, PORT: port }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  try {
    await eventually(() => /demo key: (\S+)/.test(out), 10_000, `the demo key (output so far: ${out})`);
    const key = /demo key: (\S+)/.exec(out)![1];
    const curl = /curl '([^']+)'/.exec(out)![1];
    assert.match(curl, `http://127.0.0.1:${port}/api?key=${key}`);
    const res = await fetch(curl);
    const body = await res.text();
    assert.is(res.status, 200, body);
    assert.is(body.trim().split('\n').length, 5, 'count=5 lines');
    assert.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms`);
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=wrong${key}`)).status, 401);
    // The demo key has no limits: the README's examples run back to back; the limited key has the defaults.
    for (let i = 0; i < 5; i++) assert.is((await fetch(curl)).status, 200);
    const limited = /limited key: (\S+)/.exec(out)![1];
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/api?key=${limited}&count=1`)).status);
    assert.equal(statuses, [200, 200, 429]);
  } finally {
    await stopGroup(child);
  }
});

test('a demo that cannot listen says why, and leaves no folder behind', async () => {
  const blocker = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => blocker.once('listening', r));
  const port = (blocker.address() as AddressInfo).port;
  const before = readdirSync(tmpdir()).filter((n) => n.startsWith('proxylist-demo-'));
  try {
    const run = runCliSync(['demo', '--port', String(port)]);
    assert.is.not(run.status, 0);
    assert.match(run.stderr, `cannot listen on 127.0.0.1:${port}`);
  } finally {
    blocker.close();
  }
  assert.equal(readdirSync(tmpdir()).filter((n) => n.startsWith('proxylist-demo-')), before);
});

test.run();
