import { RedisConnection } from './redis-connection.js';
import { RedisReplyError, type RespReply } from './resp.js';
import { SLOTS } from './redis-slot.js';

/** How often the slot map is asked for again: a promoted replica is followed within this and the cluster's own node timeout. */
const REFRESH_MS = 1000;

/** A command whose slot has no primary that answers now: answered as when Redis is down, at once. */
export class SlotUnavailable extends Error {}

interface Node {
  addr: string;
  conn: RedisConnection;
  /** Connected, the limiter's function loaded, and answering in time. */
  usable: boolean;
  preparing: boolean;
}

export interface ClusterLinkOptions {
  /** A seed's URL: its scheme, user and password are those of every node. */
  seed: string;
  timeoutMs: number;
  /** Readies a node before it is used (loads the limiter's function). */
  prepare(call: (command: string[]) => Promise<RespReply>): Promise<void>;
}

/**
 * The limiter's connections to a Redis Cluster (docs/several-instances.md):
 * the slot map from CLUSTER SLOTS, one connection per primary (replicas are
 * never written to), each command sent to the primary that owns its slot.
 * MOVED updates the map and sends the command once more where it points;
 * ASK sends it once with ASKING. A primary that fails, or stops answering in
 * time, affects only its slots: their commands fail at once until the map
 * names a primary that answers (the cluster promotes a replica).
 */
export class ClusterLink {
  /** Redirections followed, and slot maps read. */
  redirections = 0;
  refreshes = 0;
  private readonly nodes = new Map<string, Node>();
  private readonly owners: Array<Node | null> = new Array<Node | null>(SLOTS).fill(null);
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: ClusterLinkOptions) {}

  /** Primaries in the map. */
  get primaries(): number {
    return new Set(this.owners.filter((n) => n !== null)).size;
  }

  /** Every slot has a primary that answers. */
  get healthy(): boolean {
    return this.owners.every((n) => n !== null && n.usable);
  }

  /** Starts from a CLUSTER SLOTS reply, then reads the map every REFRESH_MS. */
  start(slots: RespReply): void {
    this.apply(slots);
    const tick = (): void => {
      if (this.closed) return;
      void this.refresh().finally(() => {
        if (!this.closed) this.timer = setTimeout(tick, REFRESH_MS).unref();
      });
    };
    this.timer = setTimeout(tick, REFRESH_MS).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.nodes.values()].map((n) => n.conn.close()));
  }

  /** Sends `command` to the owner of `slot`; `late` as RedisConnection's. */
  async call(slot: number, command: string[], late: ((reply: RespReply) => void) | null = null): Promise<RespReply> {
    const node = this.owners[slot];
    if (!node || !node.usable) throw new SlotUnavailable(`no primary of slot ${slot} answers now`);
    try {
      return await this.send(node, command, late);
    } catch (err) {
      if (!(err instanceof RedisReplyError)) throw err;
      const redirect = /^(MOVED|ASK) \d+ (\S+)$/.exec(err.message);
      if (!redirect) throw err;
      this.redirections++;
      const target = this.node(redirect[2]);
      if (!target.usable) throw new SlotUnavailable(`slot ${slot} moved to ${redirect[2]}, which is not ready yet`);
      if (redirect[1] === 'MOVED') {
        this.owners[slot] = target;
        void this.refresh();
        return this.send(target, command, late);
      }
      await target.conn.call(['ASKING']);
      return this.send(target, command, late);
    }
  }

  private async send(node: Node, command: string[], late: ((reply: RespReply) => void) | null): Promise<RespReply> {
    try {
      return await node.conn.call(command, late);
    } catch (err) {
      // A primary that does not answer in time is left alone until it answers a PING again; its slots fail at once meanwhile.
      if (!(err instanceof RedisReplyError) && node.usable) {
        node.usable = false;
        void this.probe(node);
      }
      throw err;
    }
  }

  private async probe(node: Node): Promise<void> {
    while (!this.closed && !node.usable && this.nodes.get(node.addr) === node) {
      try {
        if (node.conn.isReady) {
          await node.conn.call(['PING']);
          node.usable = true;
          return;
        }
      } catch {
        // Not yet.
      }
      await new Promise((r) => setTimeout(r, 200).unref());
    }
  }

  /** Reads the slot map from a primary that answers (or the seed). */
  private async refresh(): Promise<void> {
    // Primaries connected but not readied (their function failed to load) are tried again.
    for (const node of new Set(this.owners)) if (node && !node.usable && node.conn.isReady) this.prepare(node);
    const asked = [...this.nodes.values()].filter((n) => n.usable);
    for (const node of asked) {
      try {
        this.apply(await node.conn.call(['CLUSTER', 'SLOTS']));
        return;
      } catch {
        // Ask the next one.
      }
    }
  }

  private apply(reply: RespReply): void {
    if (!Array.isArray(reply)) return;
    this.refreshes++;
    for (const range of reply) {
      if (!Array.isArray(range) || !Array.isArray(range[2])) continue;
      const [from, to, primary] = range as [number, number, RespReply[]];
      const node = this.node(`${String(primary[0])}:${String(primary[1])}`);
      for (let s = Number(from); s <= Number(to); s++) this.owners[s] = node;
    }
  }

  /** The connection to the primary at `addr`, made and readied once. */
  private node(addr: string): Node {
    let node = this.nodes.get(addr);
    if (node) return node;
    const url = new URL(this.o.seed);
    const colon = addr.lastIndexOf(':');
    url.hostname = addr.slice(0, colon).includes(':') ? `[${addr.slice(0, colon)}]` : addr.slice(0, colon);
    url.port = addr.slice(colon + 1);
    const conn = new RedisConnection({ url: url.toString(), timeoutMs: this.o.timeoutMs });
    const n: Node = { addr, conn, usable: false, preparing: false };
    this.nodes.set(addr, n);
    conn.on('ready', () => this.prepare(n));
    conn.on('error', () => (n.usable = false));
    conn.connect();
    return n;
  }

  private prepare(node: Node): void {
    if (node.preparing) return;
    node.preparing = true;
    this.o.prepare((command) => node.conn.call(command)).then(
      () => (node.usable = true),
      () => undefined, // tried again at the next refresh
    ).finally(() => (node.preparing = false));
  }
}
