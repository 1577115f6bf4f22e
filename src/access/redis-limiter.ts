import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { maskUrl } from '../core/secret-url.js';
import type { KeyEntry } from './keys.js';
import { UNAVAILABLE, refusal, type Allowance, type LimitReason, type Limiter, type MemoryLimiter, type UsageToday, type Verdict } from './limiter.js';
import { ClusterLink } from './redis-cluster.js';
import { RedisConnection } from './redis-connection.js';
import type { RespReply } from './resp.js';
import { FUNCTION_NAME, LIBRARY, UNDO_FUNCTION_NAME, USAGE_FUNCTION_NAME, keysOf } from './redis-function.js';
import { SentinelWatch } from './redis-sentinel.js';
import { slotOf } from './redis-slot.js';
import { parseLimiterUrl } from './redis-topology.js';

export const DEFAULT_LIMITER_TIMEOUT_MS = 100;
/** How often a Redis that stopped answering in time is asked again. */
const PROBE_MS = 500;
/** Remembered refusals are swept this often. */
const SWEEP_MS = 60_000;
/** A reading of Redis's clock stands this long before a looser one may replace it. */
const CLOCK_READING_MS = 10_000;
const OK: Verdict = { ok: true };
const PAST_DEADLINE = 4;
/** Usage reads sent at a time: admissions on the same connections wait behind one batch at most. */
const USAGE_BATCH = 256;

type Reply = [verdict: number, retryMs: number, used: number, newestAgeMs: number, count: number, msToMidnight: number, nowMs: number];

interface Remembered {
  /** Monotonic ms until which the refusal stands. */
  untilMs: number;
  reason: LimitReason;
  allowance: Allowance;
}

export interface RedisLimiterOptions {
  /** One Redis or a Cluster's seeds (comma-separated URLs), or redis-sentinel://... (see parseLimiterUrl). */
  url: string;
  timeoutMs: number;
  /** Enforces the limits alone while Redis is down; null answers 503 instead. */
  fallback: MemoryLimiter | null;
  clock: Clock;
  log: Logger;
}

/**
 * The limits (docs/api.md, Usage limits) shared by every instance that uses one Redis
 * (docs/several-instances.md): one FCALL per admission, the time read inside Redis.
 *
 * Decided here without a round trip: keys without limits; refusals, which
 * are remembered per key and subnet until their retry time (exact, since
 * only accepted requests change the state); and everything while Redis is
 * known to be down (a 503, or the in-memory fallback). The connection keeps
 * no offline queue and gives each call `timeoutMs`; a call that times out
 * marks Redis down until a probe answers in time again.
 */
export class RedisLimiter implements Limiter {
  up = false;
  /** Admissions decided by the fallback while Redis was down. */
  fallbacks = 0;
  /** Accepted requests taken back because their answer came after the 503. */
  undone = 0;
  lastError: string | null = null;
  private readonly client: RedisConnection;
  private readonly refused = new Map<string, Remembered>();
  /** Per key in force, the start of its FCALL (the function and the key's three Redis keys), made once. */
  private readonly fcallHeads = new WeakMap<KeyEntry, string[]>();
  private readonly sweeper: NodeJS.Timeout;
  private prober: NodeJS.Timeout | null = null;
  private closed = false;
  /**
   * Redis's clock (ms) less this instance's monotonic clock, at most: read
   * from each reply's time against when the reply came, so the deadline it
   * gives admissions is never later than the instance's own timeout.
   */
  private clockOffset: number | null = null;
  private clockReadAt = 0;
  /** With a Redis Cluster, found at connect: its primaries; the first connection then only served to find it. */
  private cluster: ClusterLink | null = null;
  /** With Sentinels: they name the primary that `client` connects to. */
  private readonly sentinel: SentinelWatch | null = null;
  /** The first seed's URL: its scheme and credentials are those of every node. */
  private readonly seedUrl: string;

  constructor(private readonly o: RedisLimiterOptions) {
    const topology = parseLimiterUrl(o.url);
    if (topology.kind === 'sentinel') {
      const sentinel = new SentinelWatch({ ...topology, timeoutMs: o.timeoutMs, onSwitch: (addr) => this.switchTo(addr) });
      this.sentinel = sentinel;
      this.seedUrl = topology.primaryUrl;
      this.client = new RedisConnection({ url: topology.primaryUrl, timeoutMs: o.timeoutMs, target: () => sentinel.primary(), check: checkPrimary });
    } else {
      // Each attempt tries the next seed: any one of them answers for a Cluster, and a single Redis is the first that is a primary.
      const seeds = topology.urls.map((u) => new URL(u));
      let next = 0;
      const target = async () => {
        const u = seeds[next++ % seeds.length];
        return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: u.port ? Number(u.port) : 6379 };
      };
      this.seedUrl = topology.urls[0];
      this.client = new RedisConnection({ url: this.seedUrl, timeoutMs: o.timeoutMs, target: seeds.length > 1 ? target : undefined });
    }
    this.client.on('error', (err: Error) => {
      if (!this.cluster) this.down(err.message);
    });
    this.client.on('ready', () => void this.ready());
    this.sweeper = setInterval(() => this.sweep(o.clock.monotonicMs()), SWEEP_MS).unref();
  }

  /** Connects in the background: the server serves meanwhile, limited keys get 503 (or the fallback). */
  start(): void {
    this.sentinel?.start();
    this.client.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    if (this.prober) clearInterval(this.prober);
    await Promise.all([this.client.close(), this.cluster?.close(), this.sentinel?.close()]);
  }

  /** One Redis, a Cluster, or a primary named by Sentinels (docs/several-instances.md). */
  get mode(): 'single' | 'cluster' | 'sentinel' {
    return this.cluster ? 'cluster' : this.sentinel ? 'sentinel' : 'single';
  }

  /** The Redis that admissions go to (host:port), but with a Cluster. */
  get primary(): string | null {
    return this.cluster ? null : this.client.address;
  }

  /** Failovers the Sentinels announced, followed by moving the connection to the new primary. */
  switches = 0;

  /** Primaries in use. */
  get nodes(): number {
    return this.cluster?.primaries ?? 1;
  }

  /** Redirections followed and slot maps read, with a Cluster. */
  get redirections(): number {
    return this.cluster?.redirections ?? 0;
  }

  get mapRefreshes(): number {
    return this.cluster?.refreshes ?? 0;
  }

  admit(key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict | Promise<Verdict> {
    const { perWindow, windowS, daily, subnets } = key.limits;
    if (perWindow === null && daily === null && subnets === null) return OK;
    const id = `${key.id}|${subnet}`;
    const remembered = this.refused.get(id);
    if (remembered) {
      if (monoMs < remembered.untilMs) return { ...refusal(remembered.reason, remembered.untilMs - monoMs), allowance: remembered.allowance };
      this.refused.delete(id);
    }
    if (!this.up) return this.unavailable(key, subnet, nowMs, monoMs);
    // Past the deadline Redis counts nothing: by then this instance has answered 503, at no cost to the client.
    const deadline = this.clockOffset === null ? -1 : Math.floor(this.o.clock.monotonicMs() + this.clockOffset + this.o.timeoutMs);
    const args = [perWindow ?? -1, (windowS ?? 0) * 1000, daily ?? -1, subnets ?? -1, subnet, deadline].map(String);
    const late = (reply: RespReply) => this.undoIfAccepted(key, subnets === null ? '' : String(subnet), reply as Reply);
    return this.call(key, args, late).then(
      (reply) => {
        const monoNow = this.o.clock.monotonicMs();
        this.readClock(reply[6], monoNow);
        if (reply[0] === PAST_DEADLINE) return this.unavailable(key, subnet, nowMs, monoMs);
        return this.verdictOf(key, id, subnet, reply, monoNow);
      },
      (err: Error) => {
        // With a Cluster, a failing primary affects only its slots: the cluster link keeps track of it.
        if (!this.cluster) this.down(err.message);
        else this.lastError = err.message;
        // A primary demoted under this connection: the Sentinels (or the next seed) name the one to use.
        if (!this.cluster && /^READONLY/.test(err.message)) this.client.reconnect(err.message, false);
        return this.unavailable(key, subnet, nowMs, monoMs);
      },
    );
  }

  allowance(key: KeyEntry, nowMs: number, monoMs: number): Allowance | null {
    return this.o.fallback && !this.up ? this.o.fallback.allowance(key, nowMs, monoMs) : null;
  }

  /** One FCALL to admit. */
  private call(key: KeyEntry, args: string[], late: (reply: RespReply) => void): Promise<Reply> {
    let head = this.fcallHeads.get(key);
    if (!head) this.fcallHeads.set(key, (head = ['FCALL', FUNCTION_NAME, '3', ...keysOf(key.id)]));
    return this.run(head, [...head, ...args], late) as Promise<Reply>;
  }

  /** A command of the library's; the library is loaded again when Redis no longer has it (a restart without persistence, a flush). */
  private async run(head: string[], command: string[], late: ((reply: RespReply) => void) | null = null): Promise<RespReply> {
    try {
      return await this.send(head, command, late);
    } catch (err) {
      if (!/function not found/i.test((err as Error).message)) throw err;
      await this.send(head, ['FUNCTION', 'LOAD', 'REPLACE', LIBRARY]);
      return this.send(head, command, late);
    }
  }

  /**
   * The day's count and subnets of every limited key, read from the primary
   * of each (one read-only FCALL per key, USAGE_BATCH at a time), on the
   * day of Redis's clock, as admissions are; keys
   * without limits never reach Redis, so their usage is not known.
   */
  async usage(keys: readonly KeyEntry[]): Promise<Map<string, UsageToday>> {
    if (!this.up) throw new Error('Redis is down');
    const out = new Map<string, UsageToday>();
    const limited = keys.filter((k) => k.limits.perWindow !== null || k.limits.daily !== null || k.limits.subnets !== null);
    for (const key of keys) out.set(key.id, { today: null, subnets: null });
    for (let i = 0; i < limited.length; i += USAGE_BATCH) {
      const batch = limited.slice(i, i + USAGE_BATCH);
      const replies = await Promise.all(batch.map((key) => {
        const [, day, subnets] = keysOf(key.id);
        const command = ['FCALL_RO', USAGE_FUNCTION_NAME, '2', day, subnets];
        return this.run(command, command) as Promise<[number, number]>;
      }));
      batch.forEach((key, j) => out.set(key.id, { today: replies[j][0], subnets: key.limits.subnets === null ? null : replies[j][1] }));
    }
    return out;
  }

  /** A command about the keys of `head` (an FCALL's start: its third element on are the keys): to Redis, or to the primary of their slot. */
  private send(head: string[], command: string[], late: ((reply: RespReply) => void) | null = null): Promise<RespReply> {
    return this.cluster ? this.cluster.call(slotOf(head[3]), command, late) : this.client.call(command, late);
  }

  private verdictOf(key: KeyEntry, id: string, subnet: number, reply: Reply, monoMs: number): Verdict {
    const [code, retryMs, used, newestAgeMs, count, msToMidnight] = reply;
    const { perWindow, windowS, daily, subnets } = key.limits;
    const windowMs = (windowS ?? 0) * 1000;
    const allowance: Allowance = {
      window: perWindow === null ? null : { limit: perWindow, windowS: windowS ?? 0, remaining: perWindow - used, resetS: newestAgeMs < 0 || used === 0 ? 0 : Math.ceil((windowMs - newestAgeMs) / 1000) },
      daily: { limit: daily ?? Infinity, remaining: daily === null ? Infinity : Math.max(0, daily - count), resetS: Math.ceil(msToMidnight / 1000) },
    };
    if (code === 0) return { ok: true, allowance };
    const reason: LimitReason = code === 1 ? { limit: 'subnet', subnets: subnets!, subnet } : code === 2 ? { limit: 'frequency', perWindow: perWindow!, windowS } : { limit: 'daily', daily: daily! };
    this.refused.set(id, { untilMs: monoMs + retryMs, reason, allowance });
    return { ...refusal(reason, retryMs), allowance };
  }

  /** A reading of Redis's clock `redisMs`, whose reply came at `monoMs`: the tightest bound wins, and a fresh one after a while. */
  private readClock(redisMs: number, monoMs: number): void {
    const offset = redisMs - monoMs;
    if (this.clockOffset === null || offset > this.clockOffset || monoMs - this.clockReadAt > CLOCK_READING_MS) {
      this.clockOffset = offset;
      this.clockReadAt = monoMs;
    }
  }

  /** A reply that came after the 503: if Redis accepted the request all the same, it is taken back. */
  private undoIfAccepted(key: KeyEntry, subnet: string, reply: Reply): void {
    if (!Array.isArray(reply) || reply[0] !== 0) return;
    this.undone++;
    const command = ['FCALL', UNDO_FUNCTION_NAME, '3', ...keysOf(key.id), String(reply[6]), subnet];
    this.send(command, command).catch((err: Error) => {
      this.o.log.warn({ event: 'limiter_undo_failed', key: key.label, reason: err.message }, 'a request answered 503 could not be taken back in Redis');
    });
  }

  private unavailable(key: KeyEntry, subnet: number, nowMs: number, monoMs: number): Verdict {
    if (!this.o.fallback) return UNAVAILABLE;
    this.fallbacks++;
    return this.o.fallback.admit(key, subnet, nowMs, monoMs);
  }

  private async load(): Promise<void> {
    await this.client.call(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY]);
  }

  /** Connected: the function is loaded (again) before any admission is sent. */
  private async ready(): Promise<void> {
    try {
      const [s, us] = (await this.client.call(['TIME'])) as [string, string];
      this.readClock(Number(s) * 1000 + Math.floor(Number(us) / 1000), this.o.clock.monotonicMs());
      // A node of a Redis Cluster answers with its slot map (a replica too: it is only asked the map); one Redis says clustering is off.
      const slots = this.sentinel ? null : await this.client.call(['CLUSTER', 'SLOTS']).catch(() => null);
      if (Array.isArray(slots) && slots.length > 0) {
        if (this.closed || this.cluster) return;
        this.cluster = new ClusterLink({ seed: this.seedUrl, timeoutMs: this.o.timeoutMs, prepare: async (call) => void (await call(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY])) });
        this.cluster.start(slots);
        void this.client.close();
        this.o.log.info({ event: 'limiter_cluster', url: maskUrl(this.o.url), primaries: this.cluster.primaries }, `Redis Cluster found: ${this.cluster.primaries} primaries`);
      } else {
        // Admissions write: a replica named as the one Redis is refused (and the next seed tried).
        if (!this.sentinel) await checkPrimary((command) => this.client.call(command));
        await this.load();
      }
      this.markUp();
    } catch (err) {
      this.down((err as Error).message);
      if (err instanceof NotPrimary) this.client.reconnect(err.message, false);
    }
  }

  /** The Sentinels announced a new primary: the connection moves there at once, unless it already did. */
  private switchTo(addr: string): void {
    if (this.client.address === addr && this.client.busy) return;
    this.switches++;
    this.o.log.info({ event: 'limiter_switch', primary: addr }, `the Sentinels switched the primary to ${addr}`);
    this.client.reconnect(`the Sentinels switched the primary to ${addr}`, true);
  }

  private markUp(): void {
    if (this.up || this.closed) return;
    this.up = true;
    this.lastError = null;
    if (this.prober) clearInterval(this.prober);
    this.prober = null;
    this.o.log.info({ event: 'limiter_up', url: maskUrl(this.o.url) }, 'Redis limiter is up');
  }

  /** Redis did not answer in time, or the connection broke: answer without it until it is back. */
  private down(reason: string): void {
    this.lastError = reason;
    if (!this.up || this.closed) return;
    this.up = false;
    this.o.log.warn({ event: 'limiter_down', url: maskUrl(this.o.url), reason }, this.o.fallback ? 'Redis limiter is down; limits are enforced by this instance alone' : 'Redis limiter is down; limited keys get 503');
    // A broken connection comes back through 'ready'; a Redis that only stopped answering in time, through the probe.
    this.prober = setInterval(() => {
      if (!this.client.isReady) return;
      this.client.call(['PING']).then(() => this.markUp(), () => undefined);
    }, PROBE_MS).unref();
  }

  private sweep(monoMs: number): void {
    for (const [id, r] of this.refused) if (r.untilMs <= monoMs) this.refused.delete(id);
  }
}

class NotPrimary extends Error {}

/** ROLE: admissions are written only to a primary. */
async function checkPrimary(call: (command: string[]) => Promise<RespReply>): Promise<void> {
  const role = await call(['ROLE']);
  if (!Array.isArray(role) || role[0] !== 'master') throw new NotPrimary(`the node is a ${Array.isArray(role) ? String(role[0]) : 'server of unknown role'}, not a primary`);
}
