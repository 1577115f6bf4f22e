/**
 * The two HTTP engines (docs/operations.md, Where it runs), each against
 * the bare server of its own kind that serves the same bytes (its ceiling),
 * and side by side; runs alternate, so that the machine's drift touches
 * all alike:
 * - small: the small answers (`SMALL_MIX`), wrk's throughput and p99: the
 *   node engine against a bare node:http server (contenders/node-ceiling.ts),
 *   the uws engine against the bare uWebSockets.js app;
 * - mix: the latency mix (`LATENCY_MIX`, 0 B to 1.2 MB), the same;
 * - burst: small queries timed by a prober alone, then while 30 readers
 *   take the 70 MB JSON of 200,000 records: their p99 during the burst
 *   against their own without it, per engine;
 * - https: small answers over TLS, the node engine against the uws engine;
 * - layers: where the node engine's time goes, on the small answers' bytes:
 *   the service on the node engine (one thread), the node engine alone
 *   (contenders/node-engine-bare.ts), and the bare node:http server without
 *   and with a fixed busy work per request (`WORK_US`), which shows what a
 *   few microseconds of a service's own work cost in throughput.
 * Servers and ceilings on core 0, wrk and the prober on core 1; the median
 * of 3 runs of 10 s (1 run of 4 s with --quick).
 * Run: npm run bench -- engines [--quick] [--records N] [--only small,mix,burst,https,layers]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../support/ports.js';
import { TestAuthority } from '../support/certificates.js';
import { BENCH_KEY, benchFiles, captureBodies, median, probe, recordsOption, round2, sleep, startPinned, startServer, startWrk, stop, waitFor, waitHttps, writeResult, wrk, type WrkOptions, type WrkResult } from './harness.js';
import { LATENCY_MIX, SMALL_MIX } from './mix.js';

const quick = process.argv.includes('--quick');
const RUNS = quick ? 1 : 3;
const SECONDS = quick ? 4 : 10;
const RECORDS = recordsOption(100_000);
const BURST = { records: 200_000, big: 'time=100000&get=json', readers: 30, small: ['type=http&count=100', 'get=json&country=us&count=50', 'type=socks5&anon=elite&count=20', 'get=json&pretty=0&works=90&count=200'] };
const only = process.argv.indexOf('--only');
const parts = only < 0 ? ['small', 'mix', 'burst', 'https', 'layers'] : process.argv[only + 1].split(',');
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const api = (q: string) => `/api?key=${BENCH_KEY}${q ? '&' + q : ''}`;
const ENGINES = ['uws', 'node'] as const;
type EngineName = (typeof ENGINES)[number];
/** The ceilings answer with every header line the server sends but those their server writes itself: the same bytes. */
const EVERY_HEADER = ['content-type', 'cache-control', 'vary', 'etag', 'snapshot-generated-at', 'list-cursor', 'content-disposition', 'content-encoding', 'x-content-type-options'];
const CEILINGS: Record<EngineName, string> = { uws: here('./contenders/ceiling.js'), node: here('./contenders/node-ceiling.js') };
const NODE_ENGINE_BARE = here('./contenders/node-engine-bare.js');
/** Microseconds of busy work per request given to the bare node:http server, for the layers part. */
const WORK_US = [2, 5, 10];

const pick = (rs: WrkResult[]) => ({ ...rs.find((x) => x.rps === median(rs.map((y) => y.rps)))!, runs_rps: rs.map((x) => x.rps), runs_p99_ms: rs.map((x) => x.p99_ms) });
const ratio = (a: number[], b: number[]) => round2(median(a) / median(b));
const perRun = (a: number[], b: number[]) => a.map((x, i) => round2(x / b[i]));

/** wrk on each engine and on its ceiling, alternating: throughput and p99 with their ratios. */
async function againstCeilings(id: string, mix: readonly string[], work: string, snapshot: string, keys: string): Promise<Record<string, unknown>> {
  const paths = mix.map(api);
  const [uwsPort, nodePort, ceilingPort] = await freePorts(3);
  const ports: Record<EngineName, number> = { uws: uwsPort, node: nodePort };
  const servers = ENGINES.map((e) => startServer(snapshot, keys, ports[e], undefined, ['--engine', e]));
  const runs: Record<string, WrkResult[]> = { uws: [], node: [], uws_ceiling: [], node_ceiling: [] };
  try {
    for (const e of ENGINES) await waitFor(`http://127.0.0.1:${ports[e]}/health`, 180_000, (s) => s === 200);
    for (const e of ENGINES) wrk(ports[e], paths, 2, work); // warm-up
    for (let r = 0; r < RUNS; r++) {
      for (const e of ENGINES) {
        runs[e].push(wrk(ports[e], paths, SECONDS, work));
        // The bytes the server answers now, for its ceiling.
        const dir = join(work, `bodies-${id}-${r}-${e}`);
        mkdirSync(dir, { recursive: true });
        const { index } = await captureBodies(ports[e], paths, dir, {}, false, EVERY_HEADER);
        const ceiling = startPinned(process.execPath, [CEILINGS[e], index, String(ceilingPort)]);
        try {
          await waitFor(`http://127.0.0.1:${ceilingPort}${paths[0]}`, 60_000, (s) => s === 200);
          wrk(ceilingPort, paths, 2, work); // warm-up
          runs[`${e}_ceiling`].push(wrk(ceilingPort, paths, SECONDS, work));
        } finally {
          await stop(ceiling);
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    for (const s of servers) await stop(s);
  }
  const rps = (k: string) => runs[k].map((x) => x.rps);
  const p99 = (k: string) => runs[k].map((x) => x.p99_ms);
  const row = {
    id,
    uws: pick(runs.uws), node: pick(runs.node), uws_ceiling: pick(runs.uws_ceiling), node_ceiling: pick(runs.node_ceiling),
    ratios: {
      node_vs_node_ceiling_rps: ratio(rps('node'), rps('node_ceiling')), per_run: perRun(rps('node'), rps('node_ceiling')),
      node_vs_node_ceiling_p99: ratio(p99('node'), p99('node_ceiling')), per_run_p99: perRun(p99('node'), p99('node_ceiling')),
      uws_vs_uws_ceiling_rps: ratio(rps('uws'), rps('uws_ceiling')),
      uws_vs_uws_ceiling_p99: ratio(p99('uws'), p99('uws_ceiling')),
      node_vs_uws_rps: ratio(rps('node'), rps('uws')), node_vs_uws_per_run: perRun(rps('node'), rps('uws')),
      node_vs_uws_p99: ratio(p99('node'), p99('uws')),
    },
  };
  console.error(`[${id}] ${JSON.stringify(row.ratios)}`);
  return row;
}

const at = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const p99Of = (ms: number[]) => round2(at([...ms].sort((a, b) => a - b), 0.99));

/** Small queries' p99 alone, then during a burst of big readers, per engine. */
async function burst(work: string): Promise<Record<string, unknown>> {
  const { snapshot, keys } = benchFiles(work, 'burst', BURST.records);
  const smallPaths = BURST.small.map(api);
  const [uwsPort, nodePort] = await freePorts(2);
  const ports: Record<EngineName, number> = { uws: uwsPort, node: nodePort };
  const servers = ENGINES.map((e) => startServer(snapshot, keys, ports[e], undefined, ['--engine', e]));
  const runs: Record<EngineName, Array<{ alone_p99_ms: number; burst_p99_ms: number; answered: number; big_rps: number; errors: number }>> = { uws: [], node: [] };
  try {
    for (const e of ENGINES) await waitFor(`http://127.0.0.1:${ports[e]}/health`, 180_000, (s) => s === 200);
    for (let r = 0; r < RUNS; r++) {
      for (const e of ENGINES) {
        const port = ports[e];
        const alone = await probe(port, smallPaths, SECONDS * 1000, work);
        const timed = probe(port, smallPaths, (SECONDS + 2) * 1000, work);
        await sleep(1000);
        const big = startWrk(port, [api(BURST.big)], work, { connections: BURST.readers });
        await sleep(SECONDS * 1000);
        const b = await big.finish();
        const during = (await timed).filter((s) => s.atMs >= 1000 && s.atMs < 1000 + SECONDS * 1000);
        runs[e].push({ alone_p99_ms: p99Of(alone.map((s) => s.ms)), burst_p99_ms: p99Of(during.map((s) => s.ms)), answered: during.length, big_rps: round2(b.rps), errors: b.errors });
      }
    }
  } finally {
    for (const s of servers) await stop(s);
  }
  const result = Object.fromEntries(ENGINES.map((e) => [e, { runs: runs[e], burst_vs_alone_p99: perRun(runs[e].map((x) => x.burst_p99_ms), runs[e].map((x) => x.alone_p99_ms)) }]));
  console.error(`[burst] ${JSON.stringify(result)}`);
  return result;
}

/** Small answers over TLS, the node engine against the uws engine. */
async function https(work: string, snapshot: string, keys: string): Promise<Record<string, unknown>> {
  const pair = new TestAuthority(work).issue('bench');
  const paths = SMALL_MIX.map(api);
  const [uwsPort, nodePort] = await freePorts(2);
  const ports: Record<EngineName, number> = { uws: uwsPort, node: nodePort };
  const servers = ENGINES.map((e) => startServer(snapshot, keys, ports[e], undefined, ['--engine', e, '--tls-cert', pair.cert, '--tls-key', pair.key]));
  const o: WrkOptions = { https: true };
  const runs: Record<EngineName, WrkResult[]> = { uws: [], node: [] };
  try {
    for (const e of ENGINES) await waitHttps(ports[e], '/health', work);
    for (const e of ENGINES) wrk(ports[e], paths, 2, work, o); // warm-up
    for (let r = 0; r < RUNS; r++) for (const e of ENGINES) runs[e].push(wrk(ports[e], paths, SECONDS, work, o));
  } finally {
    for (const s of servers) await stop(s);
  }
  const row = {
    uws: pick(runs.uws), node: pick(runs.node),
    node_vs_uws_rps: ratio(runs.node.map((x) => x.rps), runs.uws.map((x) => x.rps)),
    node_vs_uws_p99: ratio(runs.node.map((x) => x.p99_ms), runs.uws.map((x) => x.p99_ms)),
  };
  console.error(`[https] node ${row.node.rps} vs uws ${row.uws.rps} req/s = ${row.node_vs_uws_rps}x, p99 ${row.node_vs_uws_p99}x`);
  return row;
}

/**
 * The layers of the node engine's time on the small answers: the service,
 * the engine alone and the bare server with and without busy work, all on
 * the bytes the service answers, runs alternating; ratios to the bare server.
 */
async function layers(work: string, snapshot: string, keys: string): Promise<Record<string, unknown>> {
  const paths = SMALL_MIX.map(api);
  const [servicePort, enginePort, ...barePorts] = await freePorts(3 + WORK_US.length);
  const ports: Record<string, number> = { service: servicePort, engine: enginePort, bare: barePorts[0] };
  WORK_US.forEach((us, i) => (ports[`bare_work_${us}us`] = barePorts[i + 1]));
  const server = startServer(snapshot, keys, servicePort, undefined, ['--engine', 'node', '--threads', '1']);
  const others: ReturnType<typeof startPinned>[] = [];
  const runs: Record<string, WrkResult[]> = Object.fromEntries(Object.keys(ports).map((k) => [k, []]));
  try {
    await waitFor(`http://127.0.0.1:${servicePort}/health`, 180_000, (s) => s === 200);
    wrk(servicePort, paths, 2, work); // warm-up
    const dir = join(work, 'bodies-layers');
    mkdirSync(dir, { recursive: true });
    const { index } = await captureBodies(servicePort, paths, dir, {}, false, EVERY_HEADER);
    others.push(startPinned(process.execPath, [NODE_ENGINE_BARE, index, String(enginePort)]));
    others.push(startPinned(process.execPath, [CEILINGS.node, index, String(ports.bare)]));
    for (const us of WORK_US) others.push(startPinned(process.execPath, [CEILINGS.node, index, String(ports[`bare_work_${us}us`]), String(us)]));
    for (const [name, port] of Object.entries(ports)) {
      if (name === 'service') continue;
      await waitFor(`http://127.0.0.1:${port}${paths[0]}`, 60_000, (s) => s === 200);
      wrk(port, paths, 2, work); // warm-up
    }
    for (let r = 0; r < RUNS; r++) for (const [name, port] of Object.entries(ports)) runs[name].push(wrk(port, paths, SECONDS, work));
  } finally {
    await stop(server);
    for (const o of others) await stop(o);
  }
  const rps = (k: string) => runs[k].map((x) => x.rps);
  const row = {
    ...Object.fromEntries(Object.keys(ports).map((k) => [k, pick(runs[k])])),
    vs_bare_rps: Object.fromEntries(Object.keys(ports).map((k) => [k, { median: ratio(rps(k), rps('bare')), per_run: perRun(rps(k), rps('bare')) }])),
  };
  console.error(`[layers] ${JSON.stringify(row.vs_bare_rps)}`);
  return row;
}

const work = mkdtempSync(join(tmpdir(), 'proxylist-engines-'));
try {
  const doc: Record<string, unknown> = { date: new Date().toISOString(), cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, records: RECORDS, runs: RUNS, seconds: SECONDS };
  const needsSnapshot = parts.some((p) => p !== 'burst');
  const { snapshot, keys } = needsSnapshot ? benchFiles(work, 'snapshot', RECORDS) : { snapshot: '', keys: '' };
  if (parts.includes('small')) doc.small = await againstCeilings('small', SMALL_MIX, work, snapshot, keys);
  if (parts.includes('mix')) doc.mix = await againstCeilings('mix', LATENCY_MIX, work, snapshot, keys);
  if (parts.includes('burst')) doc.burst = await burst(work);
  if (parts.includes('https')) doc.https = await https(work, snapshot, keys);
  if (parts.includes('layers')) doc.layers = await layers(work, snapshot, keys);
  writeResult(quick ? 'engines-quick' : only >= 0 ? `engines-${process.argv[only + 1].replace(/,/g, '-')}` : 'engines', doc);
} finally {
  rmSync(work, { recursive: true, force: true });
}
