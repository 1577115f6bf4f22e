import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { exitWithin, freePort, runCli } from '../helpers/cli.js';
import { readRaw } from '../helpers/http-read.js';
import { readAcrossRenewal } from '../helpers/renewal.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * The systemd unit in deploy/ runs the server as written: its environment and
 * ExecStart options, with the system folders moved under a temporary one, the
 * port moved to a free one on loopback, and its certificate put in place by
 * deploy/certbot-deploy-hook from a lineage of the tests' own authority.
 */
const HOOK = fileURLToPath(new URL('../../../deploy/certbot-deploy-hook', import.meta.url));

/** Runs the deploy hook as certbot does, for the lineage folder `lineage`, into `dest`. */
function deployHook(lineage: string, dest: string): void {
  const group = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim();
  const run = spawnSync(HOOK, [], { encoding: 'utf8', env: { ...process.env, RENEWED_LINEAGE: lineage, PROXYLIST_TLS_DIR: dest, PROXYLIST_GROUP: group } });
  assert.is(run.status, 0, run.stderr);
}

/** A certbot lineage folder: fullchain.pem and privkey.pem. */
function lineage(root: string, authority: TestAuthority, name: string): string {
  const pair = authority.issue(name, { cn: `${name}.localhost` });
  const dir = join(root, 'letsencrypt', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'fullchain.pem'), readFileSync(pair.cert));
  writeFileSync(join(dir, 'privkey.pem'), readFileSync(pair.key));
  return dir;
}
const unit = readFileSync(fileURLToPath(new URL('../../../deploy/proxylist.service', import.meta.url)), 'utf8');
const settings = (name: string): string[] =>
  unit.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));

const test = suite('deploy/proxylist.service');

test('its command line and environment start a server that serves HTTPS with the certificate of the deploy hook, takes a renewal, saves usage where it may write, and stops within TimeoutStopSec', async () => {
  const root = tempDir();
  const moved = (path: string) => join(root, path);
  const env: Record<string, string> = {};
  for (const assignment of settings('Environment')) {
    const eq = assignment.indexOf('=');
    const value = assignment.slice(eq + 1);
    env[assignment.slice(0, eq)] = value.startsWith('/') ? moved(value) : value;
  }
  for (const name of ['PROXYLIST_SNAPSHOT', 'PROXYLIST_KEYS', 'PROXYLIST_STATE', 'PROXYLIST_TLS_CERT', 'PROXYLIST_TLS_KEY']) assert.ok(env[name], `${name} is set`);
  assert.equal(settings('AmbientCapabilities'), ['CAP_NET_BIND_SERVICE'], 'port 443 without root');
  // The deploy hook puts the pair where the unit reads it, for the service's group only.
  const authority = new TestAuthority(root);
  const tlsDir = dirname(env.PROXYLIST_TLS_CERT);
  assert.is(dirname(env.PROXYLIST_TLS_KEY), tlsDir);
  deployHook(lineage(root, authority, 'first'), tlsDir);
  assert.is(statSync(env.PROXYLIST_TLS_KEY).mode & 0o777, 0o640, 'the key: owner and group only');
  assert.is(statSync(tlsDir).mode & 0o777, 0o750);
  // ProtectSystem=strict: the state file must lie under a writable path.
  const writable = settings('ReadWritePaths').flatMap((s) => s.split(' '));
  assert.ok(writable.some((p) => settings('Environment').some((e) => e.startsWith(`PROXYLIST_STATE=${p}/`))), 'the state folder is writable');

  const now = Math.floor(Date.now() / 1000);
  mkdirSync(dirname(env.PROXYLIST_SNAPSHOT), { recursive: true });
  mkdirSync(dirname(env.PROXYLIST_KEYS), { recursive: true });
  mkdirSync(dirname(env.PROXYLIST_STATE), { recursive: true });
  writeFileAtomic(env.PROXYLIST_SNAPSHOT, encodeSnapshot(generateRecords({ records: 50, seed: 8, now }), now));
  writeFileSync(env.PROXYLIST_KEYS, JSON.stringify({ keys: [{ key: 'k', name: 'ops' }] }));

  // `proxylist` on the PATH is the command line this repository builds.
  const exec = settings('ExecStart')[0].split(/\s+/);
  assert.equal(exec.slice(0, 2), ['/usr/bin/env', 'proxylist']);
  const args = exec.slice(2);
  const port = Number(await freePort());
  assert.is(args[args.indexOf('--port') + 1], '443');
  args[args.indexOf('--port') + 1] = String(port);
  args[args.indexOf('--host') + 1] = '127.0.0.1';
  const child = runCli(args, env);
  const tls = { ca: readFileSync(authority.ca) };
  try {
    await eventually(async () => (await readRaw(port, '/health', { tls }).catch(() => null))?.status === 200, 10_000, 'ready over HTTPS');
    const first = await readRaw(port, '/api?key=k&count=1', { tls });
    assert.is(first.status, 200);
    assert.is(first.peer?.cn, 'first.localhost');
    deployHook(lineage(root, authority, 'renewed'), tlsDir);
    await eventually(async () => (await readAcrossRenewal(port, '/health', { tls }))?.peer?.cn === 'renewed.localhost', 8000, 'the renewed certificate');
  } finally {
    child.proc.kill(settings('KillSignal')[0] as NodeJS.Signals);
  }
  assert.is(await exitWithin(child, Number(settings('TimeoutStopSec')[0]) * 1000), 0);
  assert.match(readFileSync(env.PROXYLIST_STATE, 'utf8'), '"count":1');
});

test.run();
