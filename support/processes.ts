import { spawn, type ChildProcess } from 'node:child_process';

/** The last bytes a process printed, kept to say why it failed. */
const KEPT_OUTPUT = 16 * 1024;

/**
 * Starts a command in a process group of its own, for commands that fork
 * (nginx's workers, Redis's saving child): stopGroup then reaches all of them.
 * `output()` is the end of what it printed, on stdout and stderr.
 */
export function spawnGroup(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess & { output(): string } {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
  let out = '';
  const keep = (d: Buffer): void => void (out = (out + d.toString()).slice(-KEPT_OUTPUT));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return Object.assign(proc, { output: () => out });
}

/** Signals every process of the group and waits until none is left (SIGKILL after `ms`). */
export async function stopGroup(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', ms = 10_000): Promise<void> {
  const alive = (): boolean => {
    try {
      process.kill(-proc.pid!, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(-proc.pid!, signal);
  const deadline = Date.now() + ms;
  while (alive()) {
    if (Date.now() > deadline) process.kill(-proc.pid!, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 20));
  }
}
