/** Shared pieces of the benchmarks: processes pinned to cores, readiness, wrk runs. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { get as getTls } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const PROBE = fileURLToPath(new URL('./probe.js', import.meta.url));
export const WRK_LUA = fileURLToPath(new URL('../../bench/wrk/rotate.lua', import.meta.url));
export const BENCH_KEY = 'bench-key';
export const SERVER_CORE = '0';
export const LOAD_CORE = '1';

/** Prints a benchmark's result and writes it to bench/results/NAME.json. */
export function writeResult(name: string, result: unknown, print = true): void {
  if (print) console.log(JSON.stringify(result, null, 2));
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', `${name}.json`), JSON.stringify(result, null, 2) + '\n');
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Two decimals, for ratios and milliseconds in results. */
/** The value after `--name` on the command line, or null. */
export function option(name: string): string | null {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 && at + 1 < process.argv.length ? process.argv[at + 1] : null;
}

/** `--records N`, or `fallback`: every benchmark that generates a snapshot takes it. */
export function recordsOption(fallback: number): number {
  const raw = option('records');
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--records must be a positive integer, not "${raw}"`);
  return n;
}

export const round2 = (x: number): number => Math.round(x * 100) / 100;
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * `--ipv6 E/X`: the shares of IPv6 entries and exits the generated
 * snapshots have (`0/0` for none, as before IPv6 was served); the
 * generator's own (0.05/0.2) when not given.
 */
function ipv6Shares(): string[] {
  const given = option('ipv6');
  if (given === null) return [];
  const [entries, exits] = given.split('/');
  return ['--ipv6-entries', entries, '--ipv6-exits', exits ?? '0'];
}

export function generateSnapshot(file: string, records: number, now: number, seed = 1): void {
  execFileSync(process.execPath, [CLI, 'snapshot', 'generate', '--records', String(records), '--out', file, '--seed', String(seed), '--now', String(now), ...ipv6Shares()]);
}

/** A snapshot of `records` checked now (or the one --snapshot gives) and the bench's keys file, in `work` under `name`. */
export function benchFiles(work: string, name: string, records: number): { snapshot: string; keys: string } {
  const snapshot = join(work, `${name}.msgpack`);
  const keys = join(work, 'keys.json');
  // --snapshot FILE: given records (to compare revisions on a snapshot an older generator wrote), else generated now.
  const given = option('snapshot');
  if (given) copyFileSync(given, snapshot);
  else generateSnapshot(snapshot, records, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  return { snapshot, keys };
}

/** Node flags for the servers under test, such as --cpu-prof to profile them (BENCH_SERVER_FLAGS). */
export const serverFlags = (): string[] => process.env.BENCH_SERVER_FLAGS?.split(' ').filter(Boolean) ?? [];

/** The server (`cli`, this build's by default) with the default options and `extra` ones on the server core, on loopback. */
export function startServer(snapshot: string, keys: string, port: number, cli = CLI, extra: string[] = []): ChildProcess {
  return startPinned(process.execPath, [...serverFlags(), cli, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', ...extra]);
}

/** The key of number `i` of a crowd (bench/wrk/rotate.lua makes the same names). */
export const crowdKeyName = (i: number): string => `crowd${String(i).padStart(7, '0')}`;

/** A keys file of the bench's unlimited key and `crowd` keys with the default limits (2 per 5 s, 34,560 a day, 10 subnets). */
export function writeCrowdKeys(file: string, crowd: number): void {
  const keys: unknown[] = [{ key: BENCH_KEY, name: 'bench', limits: { per_window: null, daily: null, subnets: null } }];
  for (let i = 0; i < crowd; i++) keys.push({ key: crowdKeyName(i) });
  writeFileSync(file, JSON.stringify({ keys }), { mode: 0o600 });
}

export function writeBenchKeys(file: string): void {
  writeFileSync(file, JSON.stringify({ keys: [{ key: BENCH_KEY, name: 'bench', limits: { per_window: null, daily: null, subnets: null } }] }), { mode: 0o600 });
}

/** Starts a command pinned to the server core (or to `cores`, a taskset list). */
export function startPinned(command: string, args: string[], cores = SERVER_CORE, env: NodeJS.ProcessEnv = {}): ChildProcess {
  // Its warnings and errors (the servers run with --log-level warn) show beside the benchmark's own output.
  return spawn('taskset', ['-c', cores, command, ...args], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
}

export async function waitFor(url: string, ms = 60_000, ok = (status: number) => status < 500): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      if (ok((await fetch(url)).status)) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not come up within ${ms} ms`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(15_000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** Parses the JSON line the Lua script prints at the end of a wrk run. */
export function parseWrk(out: string): WrkResult {
  const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '));
  if (!line) throw new Error(`wrk printed no result:\n${out}`);
  const r = JSON.parse(line.slice(9));
  const ms = (us: number) => Math.round(us / 10) / 100;
  return {
    requests: r.requests,
    rps: Math.round(r.requests / (r.duration_us / 1e6)),
    mb_per_s: Math.round(r.bytes / (r.duration_us / 1e6) / 1048576),
    p50_ms: ms(r.p50_us),
    p90_ms: ms(r.p90_us),
    p99_ms: ms(r.p99_us),
    p999_ms: ms(r.p999_us),
    max_ms: ms(r.max_us),
    errors: r.errors_connect + r.errors_read + r.errors_write + r.errors_status + r.errors_timeout,
  };
}

export interface WrkResult {
  requests: number;
  rps: number;
  mb_per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  errors: number;
}

export const CONNECTIONS = 64;

export interface WrkOptions {
  /** Offered requests per second: each connection paces itself. */
  rate?: number;
  connections?: number;
  /** Request headers, such as an Accept-Encoding. */
  headers?: Record<string, string>;
  /** Names the paths file, for runs side by side in one folder. */
  tag?: string;
  /** HTTPS instead of plain HTTP. */
  https?: boolean;
  /** A crowd of keys: each request the next of this many (crowdKeyName), from `crowdFrom`, where a path says KEYHERE. */
  crowdKeys?: number;
  crowdFrom?: number;
  /** Each request ends with a cache-buster of its own, `&_=N`. */
  buster?: boolean;
  /** wrk's threads, and the cores (a taskset list) it runs on: by default 1 thread on the load core. */
  threads?: number;
  cores?: string;
  /** wrk's scheduling priority (nice), for a load that yields its core to a measured client. */
  nice?: number;
}

function wrkArgs(port: number, paths: readonly string[], duration: string, workDir: string, o: WrkOptions): { args: string[]; env: NodeJS.ProcessEnv } {
  const file = join(workDir, `wrk-paths-${o.tag ?? 'main'}.txt`);
  writeFileSync(file, paths.join('\n') + '\n');
  const connections = o.connections ?? CONNECTIONS;
  const pacing = o.rate ? { DELAY_MS: String((connections * 1000) / o.rate) } : {};
  const headers = Object.entries(o.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  return {
    args: ['-c', o.cores ?? LOAD_CORE, 'wrk', '-t', String(o.threads ?? 1), '-c', String(connections), '-d', duration, '--timeout', '30s', ...headers, '-s', WRK_LUA, `${o.https ? 'https' : 'http'}://127.0.0.1:${port}`],
    env: {
      ...process.env, PATHS: file, ...pacing,
      ...(o.crowdKeys ? { CROWD_KEYS: String(o.crowdKeys), CROWD_FROM: String(o.crowdFrom ?? 0) } : {}),
      ...(o.buster ? { BUSTER: '1' } : {}),
    },
  };
}

/**
 * One wrk run, pinned to the load core: 1 thread, 64 connections unless
 * told otherwise, rotating through `paths`.
 */
export function wrk(port: number, paths: readonly string[], seconds: number, workDir: string, o: WrkOptions = {}): WrkResult {
  const { args, env } = wrkArgs(port, paths, `${seconds}s`, workDir, o);
  return parseWrk(execFileSync('taskset', args, { env, maxBuffer: 1 << 24 }).toString());
}

/** The longest a background load runs: longer than any benchmark's part. */
const BACKGROUND_LOAD_S = 900;

/** A wrk run like `wrk`'s that lasts until `finish()` is called (BACKGROUND_LOAD_S at most), for load beside something else. */
export function startWrk(port: number, paths: readonly string[], workDir: string, o: WrkOptions = {}): { pid: number; finish(): Promise<WrkResult> } {
  // Bounded in time even if this process is killed before it finishes the run.
  const { args, env } = wrkArgs(port, paths, `${BACKGROUND_LOAD_S}s`, workDir, { tag: 'background', ...o });
  // nice and taskset each run the next command in their own process: the pid stays wrk's.
  const load = o.nice === undefined ? spawn('taskset', args, { env }) : spawn('nice', ['-n', String(o.nice), 'taskset', ...args], { env });
  const orphaned = (): void => {
    load.kill('SIGKILL');
  };
  process.once('exit', orphaned);
  let out = '';
  load.stdout.on('data', (d) => (out += d));
  const exited = new Promise((r) => load.once('exit', r));
  return {
    // taskset runs wrk in its own process: this is wrk's.
    pid: load.pid!,
    async finish() {
      load.kill('SIGINT'); // wrk prints its summary on SIGINT
      await exited;
      process.off('exit', orphaned);
      return parseWrk(out);
    },
  };
}

/**
 * Resident and heap bytes of a server, from its own /metrics. On a connection
 * of its own: a pooled one may have been closed as idle by the server.
 */
export async function serverMemory(port: number): Promise<{ rss_mb: number; heap_used_mb: number }> {
  const text = await new Promise<string>((resolve, reject) => {
    get(`http://127.0.0.1:${port}/metrics`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)![1]);
  return {
    rss_mb: Math.round(read('proxylist_process_resident_memory_bytes') / 1e5) / 10,
    heap_used_mb: Math.round(read('proxylist_nodejs_heap_size_used_bytes') / 1e5) / 10,
  };
}

/** The median run by requests/s of `runs` wrk runs. */
export function wrkMedian(port: number, paths: readonly string[], seconds: number, runs: number, workDir: string, o: WrkOptions = {}): WrkResult & { runs_rps: number[] } {
  const results = Array.from({ length: runs }, () => wrk(port, paths, seconds, workDir, o));
  const m = median(results.map((r) => r.rps));
  return { ...results.find((r) => r.rps === m)!, runs_rps: results.map((r) => r.rps) };
}

/** A body captured from this server, for a ceiling that serves it as it is. */
export interface Captured {
  path: string;
  /** The headers a ceiling answers with: those of this server's answer. */
  headers: Array<[string, string]>;
  file: string;
  body: Buffer;
}

const SERVED_HEADERS = ['content-type', 'cache-control', 'vary', 'content-disposition', 'content-encoding'];

/**
 * Fetches `paths` from this server (with `requestHeaders`, such as an
 * Accept-Encoding), keeps each body in a file of `dir`, and writes the
 * index a ceiling reads (the headers of `served` it answers with); returns
 * the captures and the index's path.
 */
export async function captureBodies(port: number, paths: readonly string[], dir: string, requestHeaders: Record<string, string> = {}, https = false, served = SERVED_HEADERS): Promise<{ captured: Captured[]; index: string }> {
  const captured: Captured[] = [];
  for (const [i, path] of paths.entries()) {
    const body = await new Promise<{ status: number; raw: string[]; bytes: Buffer }>((resolve, reject) => {
      // node:http, which leaves an encoded body as it came; over HTTPS, the bench's own certificate is not checked.
      (https ? getTls : get)(`${https ? 'https' : 'http'}://127.0.0.1:${port}${path}`, { agent: false, headers: requestHeaders, rejectUnauthorized: false }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, raw: res.rawHeaders, bytes: Buffer.concat(parts) }));
      }).on('error', reject);
    });
    if (body.status !== 200) throw new Error(`${path}: status ${body.status}`);
    const file = join(dir, `body-${i}`);
    writeFileSync(file, body.bytes);
    // The lines as the server wrote them, names in their case: Node's http lowercases each name it is given to find its own.
    const headers: Array<[string, string]> = [];
    for (let h = 0; h < body.raw.length; h += 2) if (served.includes(body.raw[h].toLowerCase())) headers.push([body.raw[h], body.raw[h + 1]]);
    captured.push({ path, headers, file, body: body.bytes });
  }
  const index = join(dir, 'ceiling.json');
  writeFileSync(index, JSON.stringify(captured.map(({ body: _body, ...c }) => c)));
  return { captured, index };
}

/** Waits until `path` answers 200 over HTTPS (the bench's own certificate is not checked), for 180 s at most. */
export async function waitHttps(port: number, path: string, dir: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    try {
      const { captured } = await captureBodies(port, [path], dir, {}, true);
      if (captured.length === 1) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`https://127.0.0.1:${port} did not come up`);
}

/** One answer the prober timed: its path's index, when it was asked (ms since the prober began), how long it took, its body's bytes. */
export interface ProbeSample {
  path: number;
  atMs: number;
  ms: number;
  bytes: number;
}

export interface ProbeOptions {
  /** The pause of each connection between its requests. */
  pauseMs?: number;
  connections?: number;
  /** One request header, `Name: value`. */
  header?: string;
}

/**
 * Times answers from a prober process of its own on the load core
 * (bench/probe.ts) for `ms`: its connections rotate through `paths`, one
 * request at a time each.
 */
export function probe(port: number, paths: readonly string[], ms: number, workDir: string, o: ProbeOptions = {}): Promise<ProbeSample[]> {
  const out = join(workDir, `probe-${port}-${process.hrtime.bigint()}.json`);
  const args = [String(port), String(ms), out, '--pause', String(o.pauseMs ?? 0), '--connections', String(o.connections ?? 1), ...(o.header ? ['--header', o.header] : []), ...paths];
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', ['-c', LOAD_CORE, process.execPath, PROBE, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (status) => {
      if (status !== 0) return reject(new Error(`the prober exited with ${status}`));
      const { samples } = JSON.parse(readFileSync(out, 'utf8')) as { samples: Array<[number, number, number, number]> };
      rmSync(out, { force: true });
      resolve(samples.map(([path, atMs, ms, bytes]) => ({ path, atMs, ms, bytes })));
    });
  });
}
