import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { freePorts } from '../../support/ports.js';
import { UNLIMITED, eventually, tempDir } from './server.js';

export { freePort, freePorts } from '../../support/ports.js';
export { needCommand } from '../../support/commands.js';
export { spawnGroup, stopGroup } from '../../support/processes.js';

/** The built command line, started the way a user starts it. */
export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface Child {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Starts the command line; `as` runs it as another user (needs root). */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, as?: { uid: number; gid: number }): Child {
  const proc = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...as });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, stdout: () => out, stderr: () => err, exited };
}

/** Runs the command line to its end (for commands that exit at once). */
export function runCliSync(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Resolves with the child's exit code, or kills it and fails after `ms`. */
export async function exitWithin(child: Child, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.proc.kill('SIGKILL');
      reject(new Error(`process did not exit within ${ms} ms; stderr: ${child.stderr()}`));
    }, ms);
  });
  try {
    return await Promise.race([child.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}


/** Waits until the server on `port` answers /health with 200 (docs/operations.md, Health). */
export function untilReady(port: string | number, ms = 30_000): Promise<void> {
  return eventually(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200, ms, 'ready');
}

/**
 * `count` servers started as a user starts them (`proxylist serve`), ready,
 * on one generated snapshot of `records` checked around now, with the key
 * `k` and no limits, and `extra` options (by default no draining); `close`
 * stops them and removes their folder. A new snapshot may be published at
 * `snapshot`.
 */
export async function serveProcesses(count: number, records: number, seed: number, extra: string[] = ['--drain-s', '0']): Promise<{ ports: number[]; children: Child[]; snapshot: string; close(): Promise<void> }> {
  const dir = tempDir();
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records, seed, now }), now));
  writeFileSync(keys, JSON.stringify({ keys: [{ key: 'k', limits: UNLIMITED }] }));
  const ports = await freePorts(count);
  const children = ports.map((port) => runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', ...extra]));
  const close = async () => {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
    await Promise.all(children.map((c) => exitWithin(c, 15_000).catch(() => null)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((port) => untilReady(port)));
  } catch (err) {
    await close();
    throw err;
  }
  return { ports, children, snapshot, close };
}
