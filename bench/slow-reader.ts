/**
 * A client reads a 20 MB JSON dump at 100 KB/s, to the end (about 200 s),
 * while wrk drives small queries on 16 connections: the bytes the slow client
 * got, and the others' latency against a run without it. Server on core 0,
 * wrk on core 1, the slow client in this process.
 * Run: npm run bench -- slow-reader [--rate BYTES_PER_S]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../support/ports.js';
import { atRate, throttledRead } from '../support/slow-read.js';
import { BENCH_KEY, CLI, generateSnapshot, round2, serverMemory, sleep, startPinned, startWrk, stop, waitFor, writeBenchKeys, writeResult } from './harness.js';

const rateArg = process.argv.indexOf('--rate');
const RATE = rateArg > 0 ? Number(process.argv[rateArg + 1]) : 100_000;
const OTHERS = 16;
const work = mkdtempSync(join(tmpdir(), 'proxylist-slow-reader-'));
const snapshot = join(work, 'snapshot.msgpack');
const keys = join(work, 'keys.json');
const now = Math.floor(Date.now() / 1000);
generateSnapshot(snapshot, 65_000, now);
writeBenchKeys(keys);
const [port] = await freePorts(1);
const base = `http://127.0.0.1:${port}`;
const dump = `/api?key=${BENCH_KEY}&get=json&time=99999`;
const small = [`/api?key=${BENCH_KEY}&type=http&count=100`, `/api?key=${BENCH_KEY}&get=json&country=us&count=20`];

const server = startPinned(process.execPath, [CLI, 'serve', '--snapshot', snapshot, '--keys', keys, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn']);
try {
  await waitFor(`${base}/health`, 60_000, (s) => s === 200);
  const whole = Buffer.from(await (await fetch(base + dump)).arrayBuffer());
  console.error(`dump: ${whole.length} bytes; reading it at ${RATE} B/s takes ~${Math.round(whole.length / RATE)} s`);

  const alone = startWrk(port, small, work, { connections: OTHERS });
  await sleep(20_000);
  const baseline = await alone.finish();
  console.error(`others alone: ${JSON.stringify(baseline)}`);

  const beside = startWrk(port, small, work, { connections: OTHERS });
  const started = Date.now();
  let peak = await serverMemory(port);
  const sampler = setInterval(() => void serverMemory(port).then((m) => { if (m.rss_mb > peak.rss_mb) peak = m; }), 5000);
  // Twice the time the reading takes at the rate, before giving up.
  const slow = await throttledRead(port, dump, atRate(RATE), (2 * whole.length * 1000) / RATE);
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const during = await beside.finish();
  const result = {
    date: new Date().toISOString(),
    body_bytes: whole.length,
    rate_bytes_per_s: RATE,
    delivered_bytes: slow.body.length,
    identical: slow.body.equals(whole),
    seconds: Math.round(seconds),
    achieved_bytes_per_s: Math.round(slow.body.length / seconds),
    others_alone: baseline,
    others_beside_slow_reader: during,
    p99_ratio: round2(during.p99_ms / baseline.p99_ms),
    server_rss_peak_mb: peak.rss_mb,
  };
  writeResult('slow-reader', result);
} finally {
  await stop(server);
  rmSync(work, { recursive: true, force: true });
}
