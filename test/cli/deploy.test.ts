import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { exitWithin, freePort, runCli, untilReady } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

/**
 * The systemd unit in deploy/ runs the server as written: its environment and
 * ExecStart options, with the system folders moved under a temporary one.
 */
const unit = readFileSync(fileURLToPath(new URL('../../../deploy/proxylist.service', import.meta.url)), 'utf8');
const settings = (name: string): string[] =>
  unit.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));

const test = suite('deploy/proxylist.service');

test('its command line and environment start a server that serves, saves usage where it may write, and stops within TimeoutStopSec', async () => {
  const root = tempDir();
  const moved = (path: string) => join(root, path);
  const env: Record<string, string> = {};
  for (const assignment of settings('Environment')) {
    const eq = assignment.indexOf('=');
    const value = assignment.slice(eq + 1);
    env[assignment.slice(0, eq)] = value.startsWith('/') ? moved(value) : value;
  }
  for (const name of ['PROXYLIST_SNAPSHOT', 'PROXYLIST_KEYS', 'PROXYLIST_STATE']) assert.ok(env[name], `${name} is set`);
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
  const port = await freePort();
  args[args.indexOf('--port') + 1] = port;
  const child = runCli(args, env);
  try {
    await untilReady(port);
    assert.is((await fetch(`http://127.0.0.1:${port}/api?key=k&count=1`)).status, 200);
  } finally {
    child.proc.kill(settings('KillSignal')[0] as NodeJS.Signals);
  }
  assert.is(await exitWithin(child, Number(settings('TimeoutStopSec')[0]) * 1000), 0);
  assert.match(readFileSync(env.PROXYLIST_STATE, 'utf8'), '"count":1');
});

test.run();
