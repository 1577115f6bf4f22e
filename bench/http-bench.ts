/**
 * The HTTP benchmark: the same query mix against this server (cache on and
 * off), the ceiling (bare uWebSockets.js with precomputed bodies), nginx
 * serving the same bodies as static files (if installed), and the naive peer
 * (node:http + the reference engine). Every contender's bodies are checked
 * against this server's before any timing. Servers run on core 0, wrk on core
 * 1 (1 thread, 64 connections); the median of 3 runs of 10 s is reported.
 *
 * Run: npm run bench        (100,000 and 1,000,000 records)
 *      npm run bench -- http --quick  (100,000 records, 1 run of 3 s, no nginx)
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_KEY, captureBodies, type Captured, CLI, generateSnapshot, round2, serverMemory, sleep, startPinned, stop, waitFor, writeBenchKeys, writeResult, wrkMedian, type WrkResult } from './harness.js';
import { QUERY_MIX } from './mix.js';
import { freePorts } from '../support/ports.js';

const quick = process.argv.includes('--quick');
const sizes = quick ? [100_000] : [100_000, 1_000_000];
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 3 : 10;
const NGINX = '/usr/sbin/nginx';
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));


const normalize = (body: Buffer): string => body.toString('utf8').replace(/"timestamp": ?"[^"]+"/, '"timestamp":"T"');

async function fetchBody(port: number, path: string): Promise<{ body: Buffer; contentType: string; disposition: string | null; status: number }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type') ?? '', disposition: res.headers.get('content-disposition'), status: res.status };
}

/** Bodies of the mix from a contender equal the server's, fetched back to back (time moves: up to 5 tries). */
async function verify(name: string, port: number, serverPort: number, paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    let ok = false;
    for (let attempt = 0; attempt < 5 && !ok; attempt++) {
      const [mine, theirs] = [await fetchBody(serverPort, path), await fetchBody(port, path)];
      ok = theirs.status === 200 && normalize(mine.body) === normalize(theirs.body) && mine.contentType === theirs.contentType;
    }
    if (!ok) throw new Error(`${name}: the body of ${path} differs from this server's`);
  }
}

/** A ceiling serves exactly the captured bytes. */
async function verifyFixed(name: string, port: number, captured: Captured[]): Promise<void> {
  for (const c of captured) {
    const theirs = await fetchBody(port, c.path);
    if (theirs.status !== 200 || !theirs.body.equals(c.body)) throw new Error(`${name}: the body of ${c.path} differs from the captured one`);
  }
}

function nginxConfig(dir: string, port: number, captured: Captured[]): string {
  const ext = (c: Captured) => (c.headers.some(([n, v]) => n.toLowerCase() === 'content-type' && v.startsWith('application/json')) ? 'json' : 'txt');
  const map = captured.map((c, i) => `    "${c.path}" /${i}.${ext(c)};`).join('\n');
  captured.forEach((c, i) => writeFileSync(join(dir, 'bodies', `${i}.${ext(c)}`), c.body));
  return `user root; worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  types { text/plain txt; application/json json; }
  charset utf-8; charset_types text/plain application/json;
  map_hash_bucket_size 512;
  map $request_uri $body {
${map}
    default "";
  }
  server {
    listen 127.0.0.1:${port};
    root ${dir}/bodies;
    location = /api { add_header Cache-Control "private, no-cache"; add_header Vary Accept-Encoding; try_files $body =404; }
  }
}
`;
}

async function benchSize(records: number, work: string): Promise<Record<string, unknown>> {
  const snapshot = join(work, `snapshot-${records}.msgpack`);
  const keys = join(work, 'keys.json');
  generateSnapshot(snapshot, records, Math.floor(Date.now() / 1000));
  writeBenchKeys(keys);
  const paths = QUERY_MIX.map((q) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`);
  const [serverPort, cacheOffPort, ceilingPort, naivePort, nginxPort] = await freePorts(5);

  const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(serverPort), '--host', '127.0.0.1', '--log-level', 'warn']);
  const rows: Array<{ name: string; rss_mb?: number; heap_used_mb?: number } & WrkResult & { runs_rps: number[] }> = [];
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/health`, 120_000, (s) => s === 200);
    mkdirSync(join(work, 'bodies'), { recursive: true });
    const { captured, index } = await captureBodies(serverPort, paths, join(work, 'bodies'));
    console.error(`[${records}] mix bodies: ${captured.map((c) => c.body.length).join(', ')} bytes`);

    const contenders: Array<{ name: string; port: number; fixed?: boolean; start?: () => ChildProcess }> = [
      { name: 'proxylist, cache on', port: serverPort },
      { name: 'proxylist, cache off', port: cacheOffPort, start: () => startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(cacheOffPort), '--host', '127.0.0.1', '--log-level', 'warn', '--cache-mb', '0']) },
      { name: 'uWS ceiling (precomputed bodies)', port: ceilingPort, fixed: true, start: () => startPinned(process.execPath, [here('./contenders/ceiling.js'), index, String(ceilingPort)]) },
      { name: 'naive peer (node:http + Array.filter + JSON.stringify)', port: naivePort, start: () => startPinned(process.execPath, ['--max-old-space-size=8192', here('./contenders/naive-server.js'), snapshot, String(naivePort), BENCH_KEY]) },
    ];
    if (!quick && existsSync(NGINX)) {
      mkdirSync(join(work, 'nginx', 'bodies'), { recursive: true });
      const conf = join(work, 'nginx', 'nginx.conf');
      writeFileSync(conf, nginxConfig(join(work, 'nginx'), nginxPort, captured));
      contenders.splice(3, 0, { name: 'nginx static files (precomputed bodies)', port: nginxPort, fixed: true, start: () => startPinned(NGINX, ['-c', conf, '-e', join(work, 'nginx', 'nginx-error.log')]) });
    }

    for (const c of contenders) {
      const proc = c.start?.();
      try {
        await waitFor(`http://127.0.0.1:${c.port}${paths[0]}`, 120_000, (s) => s === 200);
        // The ceilings answer with the bodies captured from this server; the others compute theirs.
        if (c.start && c.fixed) await verifyFixed(c.name, c.port, captured);
        else if (c.start) await verify(c.name, c.port, serverPort, paths);
        wrkMedian(c.port, paths, 2, 1, work); // warm-up
        const r = wrkMedian(c.port, paths, SECONDS, RUNS, work);
        // This server's memory after the runs, its response cache filled (T10 under load).
        const memory = c.name.startsWith('proxylist') ? await serverMemory(c.port) : {};
        rows.push({ name: c.name, ...r, ...memory });
        console.error(`[${records}] ${c.name}: ${r.rps} req/s (runs ${r.runs_rps.join(', ')}), p99 ${r.p99_ms} ms ${JSON.stringify(memory)}`);
      } finally {
        if (proc) await stop(proc);
      }
      await sleep(500);
    }
  } finally {
    await stop(server);
  }
  const ceiling = rows.find((r) => r.name.startsWith('uWS ceiling'))!.rps;
  const naive = rows.find((r) => r.name.startsWith('naive'))!.rps;
  return {
    records,
    contenders: rows.map((r) => ({ ...r, vs_ceiling: round2(r.rps / ceiling), vs_naive: round2(r.rps / naive) })),
  };
}

function table(result: { records: number; contenders: Array<Record<string, number | string | number[]>> }): string {
  const lines = [
    `**${result.records.toLocaleString('en')} records**`,
    '',
    '| contender | req/s | MB/s | p50 ms | p99 ms | p99.9 ms | vs ceiling | vs naive | errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...result.contenders.map((c) => `| ${c.name} | ${Number(c.rps).toLocaleString('en')} | ${c.mb_per_s} | ${c.p50_ms} | ${c.p99_ms} | ${c.p999_ms} | ${c.vs_ceiling} | ${c.vs_naive} | ${c.errors} |`),
  ];
  return lines.join('\n');
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-http-bench-'));
try {
  execFileSync('wrk', ['--version'], { stdio: 'ignore' }).toString();
} catch (err) {
  if ((err as { status?: number }).status === undefined) throw new Error('wrk is needed: apt-get install wrk');
}
try {
  const results = [];
  for (const size of sizes) results.push(await benchSize(size, work));
  const doc = { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, runs: RUNS, seconds: SECONDS, connections: 64, mix: QUERY_MIX, results };
  writeResult(quick ? 'http-quick' : 'http', doc, false);
  console.log(`${doc.date}, ${doc.cores} cores (${doc.cpu}), Node ${doc.node}, wrk 1 thread x 64 connections, median of ${RUNS} x ${SECONDS} s\n`);
  for (const r of results) console.log(table(r as never) + '\n');
} finally {
  rmSync(work, { recursive: true, force: true });
}
