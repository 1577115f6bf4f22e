import { RedisConnection } from './redis-connection.js';
import type { RespReply } from './resp.js';

export interface SentinelWatchOptions {
  sentinels: Array<{ host: string; port: number }>;
  /** The name the Sentinels monitor the primary by. */
  name: string;
  timeoutMs: number;
  /** The Sentinels announced a new primary of `name` at `addr` (host:port). */
  onSwitch(addr: string): void;
}

/** How often the Sentinels are asked for the primary: a promotion is followed before the switch is announced. */
const POLL_MS = 1000;

/**
 * The Sentinels of the limiter's primary (docs/several-instances.md): asked
 * for the primary's address before each connection to it and every
 * POLL_MS, and listened to for `+switch-master` on one subscribed connection
 * per Sentinel. A Sentinel names the promoted replica as soon as it promotes
 * it, and announces the switch only once the other replicas follow, seconds
 * later; meanwhile the old primary may still take writes that are lost, so
 * asking is what bounds the time to follow.
 */
export class SentinelWatch {
  private readonly listeners: RedisConnection[];
  private readonly askers: RedisConnection[];
  /** The primary last named, host:port. */
  private known: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: SentinelWatchOptions) {
    this.askers = o.sentinels.map(({ host, port }) => {
      const conn = new RedisConnection({ url: sentinelUrl(host, port), timeoutMs: Math.max(1000, o.timeoutMs) });
      conn.on('error', () => undefined); // it connects again by itself
      return conn;
    });
    this.listeners = o.sentinels.map(({ host, port }) => {
      const conn = new RedisConnection({
        url: sentinelUrl(host, port),
        timeoutMs: Math.max(1000, o.timeoutMs),
        check: async (call) => void (await call(['SUBSCRIBE', '+switch-master'])),
        onMessage: (_channel, payload) => this.heard(payload),
      });
      conn.on('error', () => undefined); // it connects again by itself; the primary's connection reports what matters
      return conn;
    });
  }

  start(): void {
    for (const conn of [...this.askers, ...this.listeners]) conn.connect();
    const tick = (): void => {
      void this.primary().then(
        () => undefined,
        () => undefined, // the primary's connection reports what matters
      ).finally(() => {
        if (!this.closed) this.timer = setTimeout(tick, POLL_MS).unref();
      });
    };
    this.timer = setTimeout(tick, POLL_MS).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.askers, ...this.listeners].map((c) => c.close()));
  }

  /** The primary's address, from the first Sentinel that knows it (on a connection made for the question if none is open). */
  async primary(): Promise<{ host: string; port: number }> {
    const question = ['SENTINEL', 'get-master-addr-by-name', this.o.name];
    const problems: string[] = [];
    for (let i = 0; i < this.o.sentinels.length; i++) {
      const { host, port } = this.o.sentinels[i];
      const asker = this.askers[i];
      try {
        const reply = asker.isReady ? await asker.call(question) : await ask(host, port, question, Math.max(1000, this.o.timeoutMs));
        if (Array.isArray(reply) && reply.length === 2) {
          const primary = { host: String(reply[0]), port: Number(reply[1]) };
          this.named(`${primary.host}:${primary.port}`);
          return primary;
        }
        problems.push(`${host}:${port} does not monitor "${this.o.name}"`);
      } catch (err) {
        problems.push(`${host}:${port}: ${(err as Error).message}`);
      }
    }
    throw new Error(`no Sentinel names the primary: ${problems.join('; ')}`);
  }

  /** `+switch-master`: "<name> <old ip> <old port> <new ip> <new port>". */
  private heard(payload: string): void {
    const [name, , , host, port] = payload.split(' ');
    if (name === this.o.name && host && port) this.named(`${host}:${port}`);
  }

  private named(addr: string): void {
    const before = this.known;
    this.known = addr;
    if (before !== null && before !== addr) this.o.onSwitch(addr);
  }
}

function sentinelUrl(host: string, port: number): string {
  return `redis://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** One command on a connection of its own, closed after the reply. */
function ask(host: string, port: number, command: string[], timeoutMs: number): Promise<RespReply> {
  const conn = new RedisConnection({ url: sentinelUrl(host, port), timeoutMs });
  return new Promise<RespReply>((resolve, reject) => {
    conn.on('error', reject);
    conn.once('ready', () => conn.call(command).then(resolve, reject));
    conn.connect();
  }).finally(() => void conn.close());
}
