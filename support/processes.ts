import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starts a command in a process group of its own, for commands that fork
 * (nginx's workers, faketime's child): stopGroup then reaches all of them.
 */
export function spawnGroup(command: string, args: string[]): ChildProcess {
  return spawn(command, args, { stdio: 'ignore', detached: true });
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
