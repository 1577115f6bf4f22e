import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../access/keys.js';
import { writeFileAtomic } from '../core/atomic-write.js';
import { encodeSnapshot, evolveRecords, generateRecords } from '../snapshot/generate.js';
import { startServer } from '../server.js';
import { engineChoice } from '../http/engines.js';
import { integerOption, parseOptions } from './args.js';
import { superviseProcess } from './serve.js';

const DEMO_RECORDS = 20_000;
const REPUBLISH_MS = 30_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A random key of 24 base62 characters (about 143 bits), without modulo bias. */
export function randomKey(): string {
  let key = '';
  while (key.length < 24) {
    for (const b of randomBytes(32)) if (b < 248 && key.length < 24) key += BASE62[b % 62];
  }
  return key;
}

/**
 * The embedded demo: a generated snapshot in a temporary folder, changed and
 * republished every 30 s by a simulated checker through the same watch and reload path a
 * real checker uses (temp file + rename), and a fresh demo key.
 */
export const DEMO_HELP = `usage: proxylist demo [options]
  --port N      listening port (default 8080; env PORT)
  --host ADDR   listening address (default 127.0.0.1; env HOST)
  --engine E    auto, uws or node (default auto; env PROXYLIST_ENGINE)`;

export async function demoCommand(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(DEMO_HELP + '\n');
    return;
  }
  const { values } = parseOptions(args, { port: { type: 'string' }, host: { type: 'string' }, engine: { type: 'string' } });
  const engine = engineChoice(values.engine ?? process.env.PROXYLIST_ENGINE);
  const port = integerOption('port', values.port ?? process.env.PORT, 8080, 0, 65535);
  const host = values.host ?? process.env.HOST ?? '127.0.0.1';
  const dir = mkdtempSync(join(tmpdir(), 'proxylist-demo-'));
  const snapshot = join(dir, 'snapshot.msgpack');
  const keys = join(dir, 'keys.json');
  // One key without limits, for trying every example back to back; one with the default limits, to see them work.
  const key = randomKey();
  const limited = randomKey();
  const unlimited = { per_window: null, daily: null, subnets: null };
  writeFileSync(keys, JSON.stringify({ keys: [{ sha256: sha256Hex(key), name: 'demo', limits: unlimited }, { sha256: sha256Hex(limited), name: 'demo-limited' }] }, null, 2));
  // Each run of the simulated checker drops, checks again and adds a tenth of the proxies, as a real one would.
  let seed = 1;
  let records = generateRecords({ records: DEMO_RECORDS, seed, now: Math.floor(Date.now() / 1000) });
  const publish = (): void => {
    const now = Math.floor(Date.now() / 1000);
    if (seed > 1) records = evolveRecords(records, { seed, share: 0.1, now });
    seed++;
    writeFileAtomic(snapshot, encodeSnapshot(records, now));
  };
  publish();

  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    // No balancer in front of the demo: it stops at once.
    server = await startServer({ snapshot, keys, port, host, logLevel: process.env.PROXYLIST_LOG_LEVEL ?? 'warn', drainS: 0, engine });
  } catch (err) {
    // A port in use, say: the demo's folder goes with it.
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  await server.feed.settle();
  const checker = setInterval(publish, REPUBLISH_MS);
  checker.unref();
  superviseProcess(server, () => rmSync(dir, { recursive: true, force: true }));

  const base = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${server.port}`;
  process.stdout.write(
    [
      `proxylist demo: ${server.feed.current?.rows ?? 0} generated proxies, republished every ${REPUBLISH_MS / 1000} s`,
      `demo key: ${key}   (no limits: K=${key} for the README's examples)`,
      `limited key: ${limited}   (the default limits: 2 requests per 5 s, 34,560 a day, 10 subnets a day)`,
      `try:      curl '${base}/api?key=${key}&type=socks5&count=5'`,
      `          curl '${base}/api?key=${key}&get=json&country=us,de&count=2'`,
      `          curl -i '${base}/api?key=${limited}&count=1'   (the third within 5 s gets 429)`,
      `health:   curl '${base}/health'`,
      'Ctrl+C stops it.',
      '',
    ].join('\n'),
  );
}
