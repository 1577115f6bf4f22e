import { EventEmitter } from 'node:events';
import { createConnection, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { INCOMPLETE, RedisReplyError, encodeCommand, parseReply, type Parsed, type RespReply } from './resp.js';

interface Pending {
  resolve(reply: RespReply): void;
  reject(err: Error): void;
  /** Monotonic ms after which the caller is told of a timeout; the reply still takes this slot. */
  deadline: number;
  sentAt: number;
  settled: boolean;
  /** Told of a reply that came after the caller was told of a timeout. */
  late: ((reply: RespReply) => void) | null;
}

export interface RedisConnectionOptions {
  /** redis://[user:password@]host[:port][/db], or rediss:// for TLS (verified against the system's and NODE_EXTRA_CA_CERTS's authorities) */
  url: string;
  /** Longest wait for a reply, and for a connection. */
  timeoutMs: number;
  /** Where to connect, asked before each attempt (a Sentinel's primary, the next seed); the URL's host and port otherwise. */
  target?: () => Promise<{ host: string; port: number }>;
  /** Run after the handshake, before 'ready': a rejection drops the connection (a node that is not the primary). */
  check?: (call: (command: string[]) => Promise<RespReply>) => Promise<void>;
  /** Receives the messages of a subscribed connection (`['message', channel, payload]`). */
  onMessage?: (channel: string, payload: string) => void;
}

/**
 * A connection whose oldest command has waited this long is given up and made
 * again: a Redis that vanished without closing it (a failover behind one
 * address, a dropped route) would otherwise hold it for the kernel's minutes
 * of retransmissions.
 */
const STALLED_MS = 5000;
/**
 * A connection given up still reads the replies of the commands it sent for
 * this long: a Redis that was only frozen runs them when it wakes, and their
 * callers may need to know (the limiter takes back an admission it answered
 * 503). Then it is closed.
 */
const LINGER_MS = 60_000;

/**
 * One socket to Redis and the commands sent on it, whose replies come back in
 * the order of the commands: a FIFO queue.
 */
class Channel {
  readonly pending: Pending[] = [];
  /** Index of the oldest pending command in `pending` (the queue is compacted now and then). */
  head = 0;
  input: Buffer = Buffer.alloc(0);
  /** Given up: it takes no command, and closes once every reply came or LINGER_MS passed. */
  lingering = false;

  constructor(
    readonly socket: Socket,
    private readonly onMessage: ((channel: string, payload: string) => void) | undefined,
  ) {}

  /** Parses what came; false when the stream cannot be read on (the socket is then destroyed). */
  read(chunk: Buffer): boolean {
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    let pos = 0;
    for (;;) {
      let parsed: Parsed;
      try {
        parsed = parseReply(this.input, pos);
      } catch (err) {
        this.socket.destroy(err as Error);
        return false;
      }
      if (parsed === INCOMPLETE) break;
      pos = parsed.end;
      const v = parsed.value;
      if (this.onMessage && Array.isArray(v) && v[0] === 'message') {
        this.onMessage(String(v[1]), String(v[2]));
        continue;
      }
      const p = this.pending[this.head++];
      if (!p) {
        this.socket.destroy(new Error('a reply from Redis that no command asked for'));
        return false;
      }
      if (!p.settled) {
        p.settled = true;
        if (parsed.value instanceof RedisReplyError) p.reject(parsed.value);
        else p.resolve(parsed.value);
      } else if (p.late && !(parsed.value instanceof RedisReplyError)) {
        p.late(parsed.value);
      }
    }
    this.input = pos === this.input.length ? Buffer.alloc(0) : this.input.subarray(pos);
    if (this.head === this.pending.length) {
      this.pending.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
    return true;
  }

  get waiting(): boolean {
    return this.head < this.pending.length;
  }

  /** Tells every command still unanswered of `err`. */
  failPending(err: Error): void {
    for (let i = this.head; i < this.pending.length; i++) {
      const p = this.pending[i];
      if (!p.settled) {
        p.settled = true;
        p.reject(err);
      }
    }
  }
}

/**
 * One connection to Redis, for the few commands the limiter sends. Replies
 * come back in the order of the commands, so the pending commands are a FIFO
 * queue, and one timer (for the oldest) serves every timeout: a timed-out
 * command keeps its place until its reply arrives. Nothing is queued while
 * the connection is down: a command then fails at once. A lost connection is
 * made again in the background, with growing pauses.
 *
 * Events: 'ready' once connected (after AUTH and SELECT), 'error' (Error)
 * when the connection fails or is lost.
 */
export class RedisConnection extends EventEmitter {
  private ch: Channel | null = null;
  private ready = false;
  private closed = false;
  private retries = 0;
  private connecting = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private timeoutTimer: NodeJS.Timeout | null = null;
  /** Connections given up that still read the replies of what they sent. */
  private readonly lingering = new Set<Channel>();
  /** Commands written since the last flush: they go out together, after the current I/O callbacks. */
  private outbox: string[] = [];
  private flushing: NodeJS.Immediate | null = null;
  private host: string;
  private port: number;
  private readonly tls: boolean;
  private readonly handshake: string[][];

  constructor(private readonly o: RedisConnectionOptions) {
    super();
    const u = new URL(o.url);
    this.host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = u.port ? Number(u.port) : 6379;
    this.tls = u.protocol === 'rediss:';
    const user = decodeURIComponent(u.username);
    const password = decodeURIComponent(u.password);
    const db = u.pathname.replace(/^\//, '');
    this.handshake = [];
    if (password) this.handshake.push(user ? ['AUTH', user, password] : ['AUTH', password]);
    if (db && db !== '0') this.handshake.push(['SELECT', db]);
  }

  get isReady(): boolean {
    return this.ready;
  }

  /** Connected, or on the way to be (not waiting for the next attempt). */
  get busy(): boolean {
    return this.ch !== null || this.connecting;
  }

  /** The address connected to, or last tried: host:port. */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  connect(): void {
    if (this.closed || this.ch || this.connecting) return;
    if (!this.o.target) return this.open();
    this.connecting = true;
    this.o.target().then(
      ({ host, port }) => {
        this.connecting = false;
        this.host = host;
        this.port = port;
        this.open();
      },
      (err: Error) => {
        this.connecting = false;
        this.retryLater(err);
      },
    );
  }

  /**
   * Drops the connection (its pending commands fail) and makes it again:
   * at once, as when the primary moved, or after the usual pause.
   */
  reconnect(reason: string, now: boolean): void {
    if (this.closed) return;
    if (now) this.retries = 0;
    if (this.ch) return this.lost(this.ch, new Error(reason), now);
    if (now && this.reconnectTimer) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
      this.connect();
    }
  }

  private open(): void {
    if (this.closed) return;
    const socket = this.tls
      ? tlsConnect({ host: this.host, port: this.port, servername: isIP(this.host) ? undefined : this.host })
      : createConnection({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    const ch = new Channel(socket, this.o.onMessage);
    this.ch = ch;
    socket.setTimeout(Math.max(1000, this.o.timeoutMs), () => socket.destroy(new Error(`no connection to ${this.host}:${this.port} in time`)));
    socket.on('data', (chunk: Buffer) => {
      if (!ch.read(chunk)) return;
      if (ch.lingering && !ch.waiting) socket.destroy();
    });
    socket.on('error', (err) => this.lost(ch, err));
    socket.on('close', () => this.lost(ch, new Error('connection to Redis closed')));
    socket.once(this.tls ? 'secureConnect' : 'connect', () => {
      socket.setTimeout(0);
      void this.greet(ch);
    });
  }

  /**
   * Sends one command; rejects at once when not connected, and after
   * `timeoutMs` without a reply. A reply that comes after the timeout goes
   * to `late`, if given, even when the connection was given up meanwhile.
   */
  call(args: readonly string[], late: ((reply: RespReply) => void) | null = null): Promise<RespReply> {
    if (!this.ready) return Promise.reject(new Error('Redis is not connected'));
    return this.send(args, late);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    for (const ch of this.lingering) ch.socket.destroy();
    const socket = this.ch?.socket;
    if (!socket) return;
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
    });
  }

  private async greet(ch: Channel): Promise<void> {
    try {
      for (const command of this.handshake) await this.send(command);
      if (this.o.check) await this.o.check((command) => this.send(command));
      if (this.ch !== ch) return;
      this.ready = true;
      this.retries = 0;
      this.emit('ready');
    } catch (err) {
      if (this.ch === ch) this.lost(ch, err as Error);
    }
  }

  private send(args: readonly string[], late: ((reply: RespReply) => void) | null = null): Promise<RespReply> {
    const text = encodeCommand(args);
    return new Promise((resolve, reject) => {
      const now = performance.now();
      this.ch!.pending.push({ resolve, reject, sentAt: now, deadline: now + this.o.timeoutMs, settled: false, late });
      this.outbox.push(text);
      if (!this.flushing) this.flushing = setImmediate(() => this.flush());
      if (!this.timeoutTimer) this.armTimeout();
    });
  }

  private flush(): void {
    this.flushing = null;
    const text = this.outbox.length === 1 ? this.outbox[0] : this.outbox.join('');
    this.outbox = [];
    this.ch?.socket.write(text);
  }

  /** One timer at a time, for the oldest command still waiting to be told. */
  private armTimeout(): void {
    const ch = this.ch;
    if (!ch) return;
    let i = ch.head;
    while (i < ch.pending.length && ch.pending[i].settled) i++;
    if (i === ch.pending.length) return;
    this.timeoutTimer = setTimeout(() => {
      this.timeoutTimer = null;
      if (this.ch !== ch) return;
      const now = performance.now();
      for (let j = ch.head; j < ch.pending.length && ch.pending[j].deadline <= now; j++) {
        const p = ch.pending[j];
        if (!p.settled) {
          p.settled = true;
          p.reject(new Error(`Redis did not answer within ${this.o.timeoutMs} ms`));
        }
      }
      const oldest = ch.pending[ch.head];
      if (oldest && now - oldest.sentAt >= Math.max(STALLED_MS, this.o.timeoutMs)) {
        this.giveUp(ch, new Error(`Redis has not answered for ${Math.round((now - oldest.sentAt) / 1000)} s`));
        return;
      }
      this.armTimeout();
    }, Math.max(0, ch.pending[i].deadline - performance.now()) + 1);
    this.timeoutTimer.unref();
  }

  /** A connection whose Redis stopped answering: a new one is made, and this one lingers for the replies it may still get. */
  private giveUp(ch: Channel, err: Error): void {
    ch.lingering = true;
    this.lingering.add(ch);
    const linger = setTimeout(() => ch.socket.destroy(), LINGER_MS);
    linger.unref();
    ch.socket.once('close', () => {
      clearTimeout(linger);
      this.lingering.delete(ch);
    });
    this.lost(ch, err);
  }

  private lost(ch: Channel, err: Error, now = false): void {
    if (this.ch !== ch) return;
    this.ch = null;
    this.ready = false;
    this.outbox = [];
    ch.failPending(err);
    if (!ch.lingering) ch.socket.destroy();
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.timeoutTimer = null;
    this.retryLater(err, now);
  }

  /** Tells of `err`, and connects again after a pause that grows with each failure (none when `now`). */
  private retryLater(err: Error, now = false): void {
    if (this.closed) return;
    this.emit('error', err);
    const pause = now ? 0 : Math.min(100 * 2 ** this.retries++, 2000);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect();
    }, pause);
    this.reconnectTimer.unref();
  }
}
