import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { spawnGroup, stopGroup } from './processes.js';
import { tempDir } from './temp.js';

/**
 * A server the tests start as a process group of its own (so that its
 * workers or children stop with it), working in a folder of its own.
 */
export abstract class GroupServer {
  protected proc: ChildProcess | null = null;
  protected readonly dir = tempDir();

  /** `gentle` is the signal of an orderly stop for this server. */
  constructor(private readonly gentle: NodeJS.Signals) {}

  protected spawn(command: string, args: string[]): void {
    this.proc = spawnGroup(command, args);
  }

  /** Stops it with `signal` (SIGKILL: as if it crashed) and waits until no process of its group is left. */
  async stop(signal: NodeJS.Signals = this.gentle): Promise<void> {
    if (!this.proc) return;
    await stopGroup(this.proc, signal);
    this.proc = null;
  }

  async close(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
