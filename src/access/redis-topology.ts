/** Where the limiter's Redis is (docs/several-instances.md): one server or a Cluster's seeds, or the Sentinels of a primary. */
export type RedisTopology =
  | { kind: 'seeds'; urls: string[] }
  | { kind: 'sentinel'; sentinels: Array<{ host: string; port: number }>; name: string; primaryUrl: string };

const SENTINEL_PORT = 26379;

/**
 * `redis://a:6379[,redis://b:6379...]` (one Redis, or seeds of a Cluster;
 * rediss:// for TLS), or `redis-sentinel://[user:password@]s1:26379,s2:26379/NAME`
 * (the credentials are the primary's; Sentinels are asked without any).
 * Throws an Error whose message is one line, without the credentials.
 */
export function parseLimiterUrl(raw: string): RedisTopology {
  if (raw.startsWith('redis-sentinel://')) return parseSentinel(raw);
  const urls = raw.split(',');
  for (const url of urls) {
    if (!/^rediss?:\/\/./.test(url)) throw new Error(`each of a list of seeds must be a redis:// or rediss:// URL (not "${url.replace(/\/\/[^/@]*@/, '//***@')}")`);
    try {
      new URL(url);
    } catch {
      throw new Error(`"${url.replace(/\/\/[^/@]*@/, '//***@')}" is not a valid URL`);
    }
  }
  return { kind: 'seeds', urls };
}

function parseSentinel(raw: string): RedisTopology {
  const m = /^redis-sentinel:\/\/(?:([^@/]*)@)?([^/@]+)\/([^/?#]+)$/.exec(raw);
  if (!m) throw new Error('a Sentinel URL is redis-sentinel://[user:password@]host:port[,host:port...]/NAME');
  const sentinels = m[2].split(',').map((hostPort) => {
    const hp = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(hostPort);
    const port = hp?.[2] === undefined ? SENTINEL_PORT : Number(hp[2]);
    if (!hp || port < 1 || port > 65535) throw new Error(`"${hostPort}" is not a Sentinel's host:port`);
    return { host: hp[1].replace(/^\[(.*)\]$/, '$1'), port };
  });
  return { kind: 'sentinel', sentinels, name: decodeURIComponent(m[3]), primaryUrl: `redis://${m[1] ? `${m[1]}@` : ''}primary` };
}
