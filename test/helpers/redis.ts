import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { freePorts, needCommand, spawnGroup, stopGroup } from './cli.js';
import { eventually, tempDir } from './server.js';

/**
 * A real redis-server (Debian's), on a free loopback port, without
 * persistence, in a folder of its own. (Its clock cannot be moved with
 * faketime: libfaketime and Redis's jemalloc deadlock at start.)
 */
export class RedisServer {
  private proc: ChildProcess | null = null;
  private readonly dir = tempDir();

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    needCommand('redis-server', 'redis-server');
    const [port] = await freePorts(1);
    const r = new RedisServer(port);
    await r.run();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again) on its port; resolves once it answers PING. */
  async run(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir];
    this.proc = spawnGroup('redis-server', args);
    await eventually(() => this.ping(), 10_000, `redis-server on ${this.port}`);
  }

  /** Freezes the process (SIGSTOP): connections stay open and nothing answers, as with a Redis stuck in a slow command. */
  pause(): void {
    this.proc!.kill('SIGSTOP');
  }

  resume(): void {
    this.proc!.kill('SIGCONT');
  }

  /** One raw PING: true on +PONG. */
  ping(): Promise<boolean> {
    return new Promise((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: this.port });
      s.setTimeout(500, () => s.destroy());
      s.once('error', () => resolve(false));
      s.once('close', () => resolve(false));
      s.once('connect', () => s.write('PING\r\n'));
      s.once('data', (d) => {
        resolve(d.toString().startsWith('+PONG'));
        s.destroy();
      });
    });
  }

  /** Stops it with `signal` (SIGKILL: as if it crashed) and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.proc) return;
    await stopGroup(this.proc, signal);
    this.proc = null;
  }

  async close(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
