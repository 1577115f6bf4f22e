import { CodedError } from '../core/errors.js';
import { maskUrl } from '../core/secret-url.js';
import { DEFAULT_SNAPSHOT_MAX_MB } from '../core/origin.js';
import { LOG_LEVELS } from '../core/log.js';
import { DEFAULT_LIMITER_TIMEOUT_MS } from '../access/redis-limiter.js';
import { parseLimiterUrl } from '../access/redis-topology.js';
import { integerOption, shareOption } from './args.js';
import { MAX_THREADS, defaultThreads } from '../options.js';
import { engineChoice } from '../http/engines.js';
import { DEFAULT_MAX_HELD } from '../http/held-budget.js';
import { DEFAULT_HISTORY_EXACT_S, DEFAULT_HISTORY_S } from '../snapshot/snapshot-feed.js';
import { DEFAULT_MAX_SKIPPED_SHARE } from '../snapshot/decode.js';
import { parseAsnDb } from '../snapshot/exit-networks.js';
import { DEFAULT_CACHE_BYTES, DEFAULT_DRAIN_S, DEFAULT_KEYS_POLL_S, DEFAULT_METRICS_ALLOW, DEFAULT_SNAPSHOT_POLL_S, DEFAULT_WHOLE_BODIES_BYTES, type ServeOptions } from '../server.js';

/**
 * Every option of `proxylist serve`, once: its flag, its environment
 * variable (PROXYLIST_ and the flag's name), its default, how its value is
 * read, and its help line. `--help`, the environment fallbacks and the
 * table of docs/operations.md are all made from this list.
 */
interface OptionSpec {
  /** The flag without its dashes. */
  name: string;
  /** How the value is shown in help: FILE, N, ...; null for a switch. */
  value: string | null;
  /** The default as shown; null when there is none. */
  shown: string | null;
  required?: boolean;
  help: string;
  /** Puts the value (the default's when not given) into the options. */
  apply(o: ServeOptions, raw: string | undefined): void;
}

const list = (raw: string): string[] => raw.split(',').map((x) => x.trim()).filter(Boolean);
const MB = 1024 * 1024;

export const SERVE_OPTIONS: readonly OptionSpec[] = [
  { name: 'snapshot', value: 'FILE|URL', shown: null, required: true, help: 'the checker\'s snapshot: a file, or an http(s):// URL polled for changes', apply: (o, raw) => (o.snapshot = raw ?? '') },
  { name: 'keys', value: 'FILE|URL', shown: null, required: true, help: 'the keys file: a file, or an http(s):// URL polled for changes (one keys file for every instance)', apply: (o, raw) => (o.keys = raw ?? '') },
  { name: 'port', value: 'N', shown: '8080', help: 'listening port; a port in use is an error, never shared', apply: (o, raw) => (o.port = integerOption('port', raw, 8080, 0, 65535)) },
  { name: 'host', value: 'ADDR', shown: '0.0.0.0', help: 'listening address', apply: (o, raw) => (o.host = raw ?? '0.0.0.0') },
  { name: 'tls-cert', value: 'FILE', shown: null, help: 'the certificate (with its chain) in PEM: the port speaks HTTPS only, TLS 1.2 and 1.3; a renewed file is taken without a restart', apply: (o, raw) => (o.tlsCert = raw) },
  { name: 'tls-key', value: 'FILE', shown: null, help: 'the certificate\'s private key in PEM, unencrypted, readable by the service\'s user only', apply: (o, raw) => (o.tlsKey = raw) },
  { name: 'state', value: 'FILE', shown: null, help: 'where daily counts and subnets survive a restart (not with a Redis limiter)', apply: (o, raw) => (o.state = raw ?? null) },
  { name: 'trust-proxy', value: 'ADDR,...', shown: null, help: 'peers (addresses or CIDR ranges) whose X-Forwarded-For is believed', apply: (o, raw) => (o.trustProxy = raw === undefined ? [] : list(raw)) },
  { name: 'operator-hosts', value: 'NAME,...', shown: null, help: 'host names /metrics and /usage answer besides addresses and localhost (a name not listed is refused, as a page that rebinds its name here sends)', apply: (o, raw) => (o.operatorHosts = raw === undefined ? [] : list(raw).map((h) => h.toLowerCase())) },
  { name: 'metrics-allow', value: 'CIDR,...', shown: DEFAULT_METRICS_ALLOW.join(','), help: 'who may read /metrics and /usage', apply: (o, raw) => (o.metricsAllow = raw === undefined ? [...DEFAULT_METRICS_ALLOW] : list(raw)) },
  {
    name: 'log-level', value: 'LEVEL', shown: 'info', help: `one of ${LOG_LEVELS.join(', ')}`,
    apply: (o, raw) => {
      if (raw !== undefined && !(LOG_LEVELS as readonly string[]).includes(raw)) throw new CodedError('E_USAGE', `--log-level must be one of ${LOG_LEVELS.join(', ')}`);
      o.logLevel = raw ?? 'info';
    },
  },
  {
    name: 'access-log', value: null, shown: null, help: 'a log line per response: method, path (never the query), status, bytes, µs, key name',
    apply: (o, raw) => {
      if (raw !== undefined && !['1', 'true', '0', 'false'].includes(raw)) throw new CodedError('E_USAGE', `${envName('access-log')} must be 1 or 0, not "${raw}"`);
      o.accessLog = raw === '1' || raw === 'true';
    },
  },
  { name: 'cache-mb', value: 'N', shown: String(DEFAULT_CACHE_BYTES / MB), help: 'response cache size in MB; 0 turns it off', apply: (o, raw) => (o.cacheBytes = integerOption('cache-mb', raw, DEFAULT_CACHE_BYTES / MB, 0, 65536) * MB) },
  { name: 'bodies-mb', value: 'N', shown: String(DEFAULT_WHOLE_BODIES_BYTES / MB), help: 'memory in MB for bodies in flight (kept whole while read, chunks, compressed bytes); past it, bodies go through a ring of chunks', apply: (o, raw) => (o.wholeBodiesBytes = integerOption('bodies-mb', raw, DEFAULT_WHOLE_BODIES_BYTES / MB, 0, 65536) * MB) },
  {
    name: 'limiter', value: 'memory|URL', shown: 'memory', help: 'the usage limiter: in memory, or shared by instances: redis://[user:password@]host:port[/db] (rediss:// for TLS), a comma-separated list of a Cluster\'s nodes, or redis-sentinel://[user:password@]host:port,host:port/NAME; a password belongs in the environment, not on the command line',
    apply: (o, raw) => {
      if (raw !== undefined && raw !== 'memory') {
        if (!/^(rediss?|redis-sentinel):\/\/./.test(raw)) throw new CodedError('E_USAGE', `--limiter must be memory, a redis:// URL or a redis-sentinel:// URL, not "${maskUrl(raw)}"`);
        try {
          parseLimiterUrl(raw);
        } catch (err) {
          throw new CodedError('E_USAGE', `--limiter: ${(err as Error).message}`);
        }
      }
      o.limiter = raw ?? 'memory';
    },
  },
  { name: 'limiter-timeout-ms', value: 'N', shown: String(DEFAULT_LIMITER_TIMEOUT_MS), help: 'longest wait for Redis before answering 503 (or falling back)', apply: (o, raw) => (o.limiterTimeoutMs = integerOption('limiter-timeout-ms', raw, DEFAULT_LIMITER_TIMEOUT_MS, 1, 60_000)) },
  {
    name: 'limiter-fallback', value: 'deny|memory', shown: 'deny', help: 'while Redis is down: 503 for limited keys, or limits enforced by each instance alone',
    apply: (o, raw) => {
      if (raw !== undefined && raw !== 'deny' && raw !== 'memory') throw new CodedError('E_USAGE', `--limiter-fallback must be deny or memory, not "${raw}"`);
      o.limiterFallback = raw === 'memory' ? 'memory' : 'deny';
    },
  },
  { name: 'snapshot-max-mb', value: 'N', shown: String(DEFAULT_SNAPSHOT_MAX_MB), help: 'the largest snapshot downloaded from an http(s) origin; a larger one is cut off and the one in force stays', apply: (o, raw) => (o.snapshotMaxBytes = integerOption('snapshot-max-mb', raw, DEFAULT_SNAPSHOT_MAX_MB, 1, 65536) * MB) },
  { name: 'max-skipped-share', value: 'X', shown: String(DEFAULT_MAX_SKIPPED_SHARE), help: 'a snapshot with more than this share of its records invalid (0 to 1) is rejected whole, and the one in force stays', apply: (o, raw) => (o.maxSkippedShare = shareOption('max-skipped-share', raw, DEFAULT_MAX_SKIPPED_SHARE)) },
  {
    name: 'asn-db', value: 'FILE|none', shown: 'the database of @ip-location-db/asn', help: 'where the AS number and organisation of an exit the checker does not give are looked up when a snapshot is built: a MaxMind DB file (GeoLite2-ASN, DB-IP\'s ASN Lite), or none: nowhere',
    apply: (o, raw) => (o.asnDb = parseAsnDb(raw)),
  },
  { name: 'snapshot-poll-s', value: 'N', shown: String(DEFAULT_SNAPSHOT_POLL_S), help: 'seconds between conditional GETs of an http(s) snapshot', apply: (o, raw) => (o.snapshotPollS = integerOption('snapshot-poll-s', raw, DEFAULT_SNAPSHOT_POLL_S, 1, 3600)) },
  { name: 'history-s', value: 'N', shown: String(DEFAULT_HISTORY_S), help: 'seconds of snapshots remembered for change sets (since=); an older cursor gets a reset', apply: (o, raw) => (o.historyS = integerOption('history-s', raw, DEFAULT_HISTORY_S, 0, 7 * 86400)) },
  { name: 'history-exact-s', value: 'N', shown: String(DEFAULT_HISTORY_EXACT_S), help: 'seconds of cursors whose change sets are exact for any selection; an older cursor may get a wider one', apply: (o, raw) => (o.historyExactS = integerOption('history-exact-s', raw, DEFAULT_HISTORY_EXACT_S, 0, 7 * 86400)) },
  { name: 'keys-poll-s', value: 'N', shown: String(DEFAULT_KEYS_POLL_S), help: 'seconds between conditional GETs of an http(s) keys file: a key revoked there is refused within this and a second', apply: (o, raw) => (o.keysPollS = integerOption('keys-poll-s', raw, DEFAULT_KEYS_POLL_S, 1, 3600)) },
  { name: 'threads', value: 'N', shown: 'the cores it may run on', help: `serving threads, each with an app on the port, all answering from one store with limits shared exactly (1 to ${MAX_THREADS})`, apply: (o, raw) => (o.threads = integerOption('threads', raw, defaultThreads(), 1, MAX_THREADS)) },
  { name: 'engine', value: 'auto|uws|node', shown: 'auto', help: 'the HTTP engine: uWebSockets.js where a native build loads (auto), or Node\'s own http module (node), which runs on every Node.js and C library', apply: (o, raw) => (o.engine = engineChoice(raw)) },
  { name: 'uws-sha256', value: 'HEX[,HEX]', shown: 'any', help: 'load only a uWebSockets.js .node file with one of these SHA-256 digests; with another, the node engine serves and the log says why', apply: (o, raw) => (o.uwsSha256 = sha256List(raw)) },
  { name: 'max-held', value: 'N', shown: String(DEFAULT_MAX_HELD), help: 'requests with wait held at once by the whole process; past it, one is answered at once as if without wait (each costs a few KB)', apply: (o, raw) => (o.maxHeld = integerOption('max-held', raw, DEFAULT_MAX_HELD, 0, 10_000_000)) },
  { name: 'drain-s', value: 'N', shown: String(DEFAULT_DRAIN_S), help: 'seconds requests are still served after SIGTERM, while /health answers 503 draining', apply: (o, raw) => (o.drainS = integerOption('drain-s', raw, DEFAULT_DRAIN_S, 0, 3600)) },
];

/** A comma-separated list of SHA-256 digests, 64 hexadecimal digits each. */
function sha256List(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = items.find((s) => !/^[0-9a-fA-F]{64}$/.test(s));
  if (items.length === 0 || bad !== undefined) throw new CodedError('E_USAGE', `--uws-sha256 takes SHA-256 digests of 64 hexadecimal digits, separated by commas, not ${JSON.stringify(bad ?? raw)}`);
  return items;
}

/** The environment variable of an option. */
export const envName = (name: string): string => `PROXYLIST_${name.toUpperCase().replace(/-/g, '_')}`;

/** `proxylist serve --help`: one line per option. */
export function serveHelp(): string {
  const rows = SERVE_OPTIONS.map((s) => [`--${s.name}${s.value ? ` ${s.value}` : ''}`, s.help + (s.required ? ' (required)' : s.shown ? ` (default ${s.shown})` : ''), envName(s.name)]);
  const width = Math.max(...rows.map((r) => r[0].length));
  return [
    'usage: proxylist serve --snapshot FILE|URL --keys FILE [options]',
    '',
    ...rows.map(([flag, help, env]) => `  ${flag.padEnd(width)}  ${help}; env ${env}`),
    '',
    'Each option may also come from its environment variable; the flag wins. PORT and HOST are read too.',
  ].join('\n');
}

/** The table of the options in docs/operations.md, in Markdown. */
/** Reads `args` (flags) with the environment as fallback. */
export function readServeOptions(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): ServeOptions {
  const o = {} as ServeOptions;
  for (const spec of SERVE_OPTIONS) {
    const flag = values[spec.name];
    const fromEnv = env[envName(spec.name)] ?? (spec.name === 'port' ? env.PORT : spec.name === 'host' ? env.HOST : undefined);
    const raw = flag === true ? '1' : typeof flag === 'string' ? flag : fromEnv === '' ? undefined : fromEnv;
    spec.apply(o, raw);
  }
  if (!o.snapshot) throw new CodedError('E_USAGE', `missing --snapshot FILE|URL (or ${envName('snapshot')})`);
  if (!o.keys) throw new CodedError('E_USAGE', `missing --keys FILE|URL (or ${envName('keys')})`);
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) throw new CodedError('E_USAGE', `--tls-cert and --tls-key go together: ${o.tlsCert === undefined ? '--tls-key' : '--tls-cert'} was given alone`);
  if (o.state && o.limiter !== 'memory') throw new CodedError('E_USAGE', '--state cannot be used with --limiter redis://...: Redis keeps the usage');
  // A password on the command line is shown by ps to every user of the host: the environment is the place for it.
  o.secretFlags = ['snapshot', 'keys', 'limiter'].filter((name) => typeof values[name] === 'string' && maskUrl(values[name] as string) !== values[name]);
  return o;
}

/** The parseArgs configuration of the table. */
export const serveArgsConfig = Object.fromEntries(SERVE_OPTIONS.map((s) => [s.name, { type: s.value === null ? 'boolean' : 'string' } as const])) as Record<string, { type: 'string' | 'boolean' }>;
