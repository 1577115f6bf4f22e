/**
 * The one bench runner: `npm run bench -- NAME [options]` runs a benchmark
 * (after the build), its options passed on; `npm run bench` lists them, one
 * line each. bench/README.md has what each measured, and how. A benchmark
 * runs with a temporary folder of its own (TMPDIR), removed however it ends,
 * Ctrl+C included.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Bench {
  name: string;
  /** The compiled script, beside this one. */
  file: string;
  /** Node's own flags the benchmark needs (a full collection on demand, a bigger heap). */
  node?: string[];
  /** Pinned to a core of its own, apart from the server it measures. */
  pinned?: boolean;
  line: string;
  options?: string;
}

const BENCHES: Bench[] = [
  { name: 'ratios', file: 'ratios.js', line: 'this server against a bare uWebSockets.js app serving the same bytes: small answers, the mix, the mix with gzip, the real mix (also against nginx)', options: '[--quick] [--records N] [--only small,mix,gzip,real]' },
  { name: 'http', file: 'http-bench.js', line: 'the query mix against this server (cache on and off), the ceiling, nginx with the same bodies and the naive server', options: '[--quick]' },
  { name: 'tls', file: 'tls.js', line: 'HTTPS: small answers, new TLS connections and a big body against nginx over TLS; plain HTTP against another build', options: '[--quick] [--records N] [--baseline CLI]' },
  { name: 'latency', file: 'latency.js', line: 'latency by size of answer against the ceiling and nginx (the latency mix, in gzip, small answers), and small answers over time during a burst (an SVG)', options: '[--quick] [--records N] [--only mix,gzip,small,burst]' },
  { name: 'burst', file: 'burst.js', line: '30 readers of a 70 MB body beside small queries, against the bare server of the engine: fairness and memory', options: '[--quick] [--probe] [--engine uws|node] [--runs N] [--cli PATH]' },
  { name: 'rate', file: 'fixed-rate.js', line: 'latency at a fixed offered rate on the query mix, against the ceiling' },
  { name: 'new-connections', file: 'new-connections.js', line: 'one client alone, each small query on a new connection, against the ceiling' },
  { name: 'engine', file: 'engine.js', node: ['--max-old-space-size=8192'], line: 'the query engine in process against the naive reference: µs per query, the whole dump', options: '[--records N]' },
  { name: 'core', file: 'core-figures.js', node: ['--expose-gc'], line: 'build time and memory of 100,000 and 1,000,000 records, and one selective query, in process' },
  { name: 'compression', file: 'compression.js', node: ['--max-old-space-size=8192'], line: 'gzip levels 1-6 and brotli qualities 1-5 on the JSON dumps: time and size' },
  { name: 'etag', file: 'etag-cost.js', line: 'the small answers against the build before ETags', options: '[--baseline REV]' },
  { name: 'reload', file: 'reload.js', line: 'reloads: the stall and memory of each in process, the server\'s RSS while new snapshots land, p99 under load, a soak of 100 reloads and 1,000,000 requests', options: '[--records N] [--soak-records N] [--only stall,rss,load,soak]' },
  { name: 'since', file: 'since.js', line: 'change sets: exactness, history, held requests, distinct selections', options: '[--records N] [--only exact|history|held|distinct]' },
  { name: 'wait', file: 'wait.js', line: '10,000 held wait=60 requests: memory each, answered after a swap' },
  { name: 'slow-reader', file: 'slow-reader.js', line: 'a client reading a 20 MB dump at 100 KB/s beside small queries: what it got, and the others\' latency' },
  { name: 'hostile', file: 'hostile.js', pinned: true, line: 'hostile clients with the defaults, small queries timed by a prober of their own', options: '[--records N] [--cli PATH]' },
  { name: 'access', file: 'access-check.js', node: ['--expose-gc'], line: 'the key and limit check of one request, in process' },
  { name: 'limits', file: 'limits-throughput.js', line: 'throughput when 90% of requests are refused by the limits, against all accepted' },
  { name: 'usage-cost', file: 'usage-cost.js', line: 'GET /usage with 10,000 limited keys against one Redis' },
  { name: 'cluster', file: 'cluster.js', line: 'several instances and Redis: memory, admissions per second, an instance stopped' },
  { name: 'redis-clients', file: 'redis-clients.js', line: 'the limiter\'s own Redis connection against ioredis with auto-pipelining' },
  { name: 'threads', file: 'threads.js', line: 'every core in one process: small answers with 2 threads against 1 and against nginx with 1 and 2 workers, what a small answer costs the server and wrk, RSS and CPU per reload at 1,000,000 records, a burst beside small queries', options: '[--records N] [--only throughput,big,costs,rss,reload,burst]' },
  { name: 'engines', file: 'engines.js', line: 'the node engine against a bare node:http server on the same bytes, and both engines side by side: small answers, the latency mix, a burst of big readers, HTTPS', options: '[--quick] [--records N] [--only small,mix,burst,https]' },
  { name: 'cost', file: 'cost.js', line: 'CPU per answer, req/s and p99 of each engine against the bare server of its kind on the same bytes: small answers and the real mix', options: '[--quick] [--records N] [--engines uws,node] [--only small,mix] [--cli PATH]' },
  { name: 'crowd-keys', file: 'crowd-keys.js', line: 'a keys file of 1,000,000 keys in a running server of each engine: ready time and RSS, p99 of small answers during a reload of the file, RSS grown per key that asked', options: '[--engines uws,node] [--keys N] [--only reload,crowd]' },
  { name: 'networks', file: 'networks.js', node: ['--max-old-space-size=8192'], line: 'what who runs each exit adds to a store of 1,000,000 records: bytes per record and load time without the fields, with them, and with every exit looked up in the default database', options: '[--records N]' },
  { name: 'ipv6', file: 'ipv6.js', node: ['--max-old-space-size=8192'], line: 'what IPv6 entries and exits add to a store: bytes per record and load time, without IPv6, with IPv6 exits, and with a tenth IPv6 entries', options: '[--records N]' },
  { name: 'runtimes', file: 'runtimes.js', line: 'Node 20 + uWebSockets.js v20.30 against Node 24 + v20.57, each with its ceiling', options: '--node24 PATH [--records N]' },
];

const [name, ...options] = process.argv.slice(2);
const bench = BENCHES.find((b) => b.name === name);
if (!bench) {
  if (name !== undefined) console.error(`bench: no benchmark named "${name}"`);
  const width = Math.max(...BENCHES.map((b) => b.name.length));
  console.log('npm run bench -- NAME [options]   (figures and method: bench/README.md)\n');
  for (const b of BENCHES) console.log(`  ${b.name.padEnd(width)}  ${b.line}${b.options ? `  ${b.options}` : ''}`);
  process.exit(name === undefined ? 0 : 2);
}
const script = fileURLToPath(new URL(`./${bench.file}`, import.meta.url));
const args = [...(bench.node ?? []), script, ...options];
const root = mkdtempSync(join(tmpdir(), 'proxylist-bench-'));
const [command, ...commandArgs] = bench.pinned ? ['taskset', '-c', '1', process.execPath, ...args] : [process.execPath, ...args];
const child = spawn(command, commandArgs, { stdio: 'inherit', env: { ...process.env, TMPDIR: root } });
// Ctrl+C reaches the benchmark too; this process waits for it to end, then cleans up.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (status, signal) => {
  rmSync(root, { recursive: true, force: true });
  process.exit(status ?? (signal ? 1 : 0));
});
