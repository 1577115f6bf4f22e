import { copyFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { needCommand } from './commands.js';
import { eventually } from './eventually.js';
import { GroupServer } from './group-server.js';
import { freePorts } from './ports.js';

/**
 * A real redis-server (Debian's), on a free loopback port, without
 * persistence, in a folder of its own. (Its clock cannot be moved with
 * faketime: libfaketime and Redis's jemalloc deadlock at start.)
 */
export class RedisServer extends GroupServer {
  private constructor(readonly port: number, private readonly extraArgs: string[], private readonly conf: string | null) {
    super('SIGTERM');
  }

  /**
   * `extraArgs`: more of redis-server's options, such as those of a cluster
   * node; `conf`: a config file to start from (one of deploy/), whose
   * persistence is then kept.
   */
  static async start(extraArgs: string[] = [], conf: string | null = null): Promise<RedisServer> {
    needCommand('redis-server', 'redis-server');
    const [port] = await freePorts(1);
    const r = new RedisServer(port, extraArgs, conf);
    await r.run();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again) on its port; resolves once it answers PING. */
  async run(): Promise<void> {
    const persistence = this.conf ? [] : ['--save', '', '--appendonly', 'no'];
    // A copy: Sentinel has Redis rewrite its config file (CONFIG REWRITE) when it reconfigures it.
    const conf = this.conf ? join(this.dir, 'redis.conf') : null;
    if (conf) copyFileSync(this.conf!, conf);
    const args = [...(conf ? [conf] : []), '--port', String(this.port), '--bind', '127.0.0.1', ...persistence, '--dir', this.dir, ...this.extraArgs];
    this.spawn('redis-server', args);
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
}
