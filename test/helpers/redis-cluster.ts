import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { needCommand } from './cli.js';
import { RedisServer } from '../../support/redis.js';
import { eventually } from './server.js';

/** deploy/redis-cluster.conf: the tests' cluster is made of it. */
export const CLUSTER_CONF = fileURLToPath(new URL('../../../deploy/redis-cluster.conf', import.meta.url));

/**
 * A real Redis Cluster on loopback: `primaries` primaries with one replica
 * each, started from deploy/redis-cluster.conf and made by `redis-cli
 * --cluster create` as it says, with a shorter node timeout so that a
 * failover takes about a second.
 */
export class RedisCluster {
  private constructor(readonly nodes: RedisServer[]) {}

  static async start(primaries = 3): Promise<RedisCluster> {
    needCommand('redis-cli', 'redis-tools');
    const started = await Promise.allSettled(Array.from({ length: primaries * 2 }, () => RedisServer.start(['--cluster-node-timeout', '1000'], CLUSTER_CONF)));
    const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const c = new RedisCluster(nodes);
    // A start that fails stops the nodes already running: their command line no longer names the test's folder, so the runner could not tell them.
    try {
      const failed = started.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      const made = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000 });
      if (made.status !== 0) throw new Error(`redis-cli --cluster create failed: ${made.stdout}${made.stderr}`);
      await eventually(() => nodes.every((n) => c.cli(n, 'CLUSTER', 'INFO').includes('cluster_state:ok')), 20_000, 'the cluster ok on every node');
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  /** The seed URLs of every node. */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  /** One command through redis-cli to node `n`: its text reply. */
  cli(n: RedisServer, ...command: string[]): string {
    return spawnSync('redis-cli', ['-p', String(n.port), ...command], { encoding: 'utf8', timeout: 10_000 }).stdout;
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.close()));
  }
}
