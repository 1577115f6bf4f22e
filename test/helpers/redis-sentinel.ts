import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts, needCommand } from './cli.js';
import { GroupServer } from '../../support/group-server.js';
import { RedisServer } from '../../support/redis.js';
import { eventually } from './server.js';

export const SENTINEL_NAME = 'proxylist';
const REDIS_CONF = fileURLToPath(new URL('../../../deploy/redis.conf', import.meta.url));
const DEPLOY_CONF = readFileSync(fileURLToPath(new URL('../../../deploy/sentinel.conf', import.meta.url)), 'utf8');

/** Replaces the one line of deploy/sentinel.conf that starts with `start`: the file must have it. */
function setting(conf: string, start: string, line: string): string {
  const re = new RegExp(`^${start}.*$`, 'm');
  if (!re.test(conf)) throw new Error(`deploy/sentinel.conf has no "${start}" line`);
  return conf.replace(re, line);
}

/**
 * One redis-server started with --sentinel from deploy/sentinel.conf, its
 * addresses moved to loopback and its down-after shortened (Sentinel
 * rewrites the copy, in the server's own folder).
 */
class Sentinel extends GroupServer {
  constructor(readonly port: number) {
    super('SIGTERM');
  }

  run(primaryPort: number): void {
    let conf = DEPLOY_CONF;
    conf = setting(conf, 'port ', `port ${this.port}\nbind 127.0.0.1\ndir ${this.dir}`);
    conf = setting(conf, `sentinel monitor ${SENTINEL_NAME} `, `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primaryPort} 2`);
    conf = setting(conf, `sentinel down-after-milliseconds ${SENTINEL_NAME} `, `sentinel down-after-milliseconds ${SENTINEL_NAME} 1000`);
    conf = setting(conf, `sentinel failover-timeout ${SENTINEL_NAME} `, `sentinel failover-timeout ${SENTINEL_NAME} 5000`);
    const path = join(this.dir, 'sentinel.conf');
    writeFileSync(path, conf);
    this.spawn('redis-server', [path, '--sentinel']);
  }
}

/**
 * A primary and one replica of deploy/redis.conf, and three Sentinels of deploy/sentinel.conf that
 * monitor them, all Debian's redis-server on loopback, with a down-after of
 * 1 s so that a failover takes a few seconds.
 */
export class RedisSentinels {
  private constructor(readonly servers: RedisServer[], readonly sentinels: Sentinel[]) {}

  static async start(): Promise<RedisSentinels> {
    needCommand('redis-cli', 'redis-tools');
    const primary = await RedisServer.start([], REDIS_CONF);
    const replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(primary.port)], REDIS_CONF);
    const sentinels = (await freePorts(3)).map((port) => new Sentinel(port));
    const s = new RedisSentinels([primary, replica], sentinels);
    await eventually(() => s.cli(replica.port, 'INFO', 'replication').includes('master_link_status:up'), 10_000, 'the replica in sync');
    for (const sentinel of sentinels) sentinel.run(primary.port);
    // Each Sentinel knows the replica and the two other Sentinels before a failover can be agreed.
    await eventually(() => sentinels.every((x) => {
      const info = s.cli(x.port, 'SENTINEL', 'master', SENTINEL_NAME);
      return /num-slaves\n1\n/.test(info) && /num-other-sentinels\n2\n/.test(info);
    }), 20_000, 'the Sentinels aware of each other and of the replica');
    return s;
  }

  /** The --limiter URL. */
  get url(): string {
    return `redis-sentinel://${this.sentinels.map((x) => `127.0.0.1:${x.port}`).join(',')}/${SENTINEL_NAME}`;
  }

  /** The primary's port, as the first Sentinel that answers says. */
  primaryPort(): number {
    for (const x of this.sentinels) {
      const [, port] = this.cli(x.port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME).trim().split('\n');
      if (port) return Number(port);
    }
    throw new Error('no Sentinel names the primary');
  }

  /**
   * Until the replica applies what the primary is sent now: a marker written
   * on the primary is read on the replica within a moment. (After a
   * failover the old primary resyncs in full, which Redis delays by
   * seconds; writes meanwhile are not on the replica yet.)
   */
  async inSync(primary: number, replica: number): Promise<void> {
    await eventually(async () => {
      const marker = String(Math.random());
      this.cli(primary, 'SET', 'sync-marker', marker);
      await new Promise((r) => setTimeout(r, 100));
      return this.cli(replica, 'GET', 'sync-marker').trim() === marker;
    }, 30_000, 'the replica streaming from the primary');
  }

  server(port: number): RedisServer {
    return this.servers.find((r) => r.port === port)!;
  }

  /** One command through redis-cli to the server on `port`: its text reply. */
  cli(port: number, ...command: string[]): string {
    return spawnSync('redis-cli', ['-p', String(port), ...command], { encoding: 'utf8', timeout: 10_000 }).stdout;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((x) => x.close()));
  }
}
