import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { freePort, runCliSync, stopGroup } from '../helpers/cli.js';
import { eventually } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const test = suite('npm start');

test('answers a request for its printed key within 10 s of starting', async () => {
  const port = await freePort();
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
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=wrong${key}`)).status, 401);
    // The demo key has no limits: the README's examples run back to back; the limited key has the defaults.
    for (let i = 0; i < 5; i++) assert.is((await fetch(curl)).status, 200);
    const limited = /limited key: (\S+)/.exec(out)![1];
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/api?key=${limited}&count=1`)).status);
    assert.equal(statuses, [200, 200, 429]);
    await readmeExamples(Number(port), key);
  } finally {
    await stopGroup(child);
  }
});

/**
 * Every curl line of the README's examples, against the demo: each answers
 * 200 with a body of the kind it says. The change-set example runs in a
 * shell as pasted, with a wait of 1 s instead of 60.
 */
async function readmeExamples(port: number, key: string): Promise<void> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = (url: string) => url.replace('http://127.0.0.1:8080', `http://127.0.0.1:${port}`).replace('$K', key);
  const urls = [...readme.matchAll(/^curl (?:-OJ |-g )?"(http:\/\/127\.0\.0\.1:8080\/api\?key=\$K[^"]*)"/gm)].map((m) => m[1]).filter((url) => !url.includes('$C'));
  assert.ok(urls.length >= 12, `${urls.length} examples`);
  for (const url of urls) {
    const res = await fetch(at(url));
    const body = await res.text();
    assert.is(res.status, 200, `${url}: ${body.slice(0, 100)}`);
    if (/get=(json|stats)/.test(url)) JSON.parse(body);
    if (url.includes('json.file')) assert.match(String(res.headers.get('content-disposition')), 'proxies.json');
  }
  const lines = readme.split('\n');
  const cursorLine = lines.findIndex((l) => l.startsWith('C=$(curl'));
  assert.ok(cursorLine > 0, 'the change-set example');
  const script = `${lines[cursorLine]}\n${lines[cursorLine + 1].replace('wait=60', 'wait=1')}`.replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${port}`);
  const out = await new Promise<string>((resolve, reject) =>
    execFile('sh', ['-c', script], { env: { ...process.env, K: key }, timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
  const changes = JSON.parse(out) as { cursor: string; reset: boolean; upsert: object; remove: unknown[] };
  assert.equal([typeof changes.cursor, changes.reset, typeof changes.upsert, Array.isArray(changes.remove)], ['string', false, 'object', true]);
}

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
