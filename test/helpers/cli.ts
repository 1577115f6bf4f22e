import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually } from './server.js';

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

/** A port for a server started as a process: the kernel's free-port pick cannot be handed to a child. */
/**
 * A port free right now, from the system: a number picked at random could be
 * the local port of one of the many client sockets the tests open.
 */
export async function freePort(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return String(port);
}

/** Waits until the server on `port` answers /health with 200 (API.md 4: ready). */
export function untilReady(port: string | number, ms = 10_000): Promise<void> {
  return eventually(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200, ms, 'ready');
}
