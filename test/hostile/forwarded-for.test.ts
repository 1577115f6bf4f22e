import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TestAuthority } from '../../support/certificates.js';
import { exitWithin, freePorts, runCli, untilReady, type Child } from '../helpers/cli.js';
import { haproxyConfig, startHaproxy } from '../helpers/haproxy.js';
import { getFrom } from '../helpers/http-from.js';
import { eventually, tempDir } from '../helpers/server.js';

/**
 * The subnet limit cannot be forged with X-Forwarded-For (docs/api.md, Usage limits): every line of the header is read, the right-most untrusted
 * address wins, and deploy/haproxy.cfg drops the client's own header.
 */
const KEY = { key: 'k', limits: { per_window: null, daily: null, subnets: 10 } };

/** The status of a GET from a chosen loopback address, with X-Forwarded-For as these header lines (over HTTPS trusting `ca`). */
const statusFrom = async (localAddress: string, url: string, forwardedFor: string[], ca?: Buffer): Promise<number> =>
  (await getFrom(localAddress, url, { 'X-Forwarded-For': forwardedFor }, ca)).status;

const test = suite<{ dir: string; port: number; instance: Child; ca: Buffer; pem: string }>('X-Forwarded-For');

test.before(async (ctx) => {
  ctx.dir = tempDir();
  const snapshot = join(ctx.dir, 'snapshot.msgpack');
  const keys = join(ctx.dir, 'keys.json');
  const now = Math.floor(Date.now() / 1000);
  writeFileAtomic(snapshot, encodeSnapshot(generateRecords({ records: 500, seed: 19, now }), now));
  writeFileSync(keys, JSON.stringify({ keys: [KEY, { ...KEY, key: 'k2' }, { ...KEY, key: 'k3' }] }));
  [ctx.port] = await freePorts(1);
  ctx.instance = runCli(['serve', '--snapshot', snapshot, '--keys', keys, '--port', String(ctx.port), '--host', '127.0.0.1', '--trust-proxy', '127.0.0.1', '--drain-s', '0']);
  await untilReady(ctx.port);
  // haproxy's certificate: the certificate and its key in one file.
  const authority = new TestAuthority(ctx.dir);
  const pair = authority.issue('haproxy');
  ctx.ca = readFileSync(authority.ca);
  ctx.pem = join(ctx.dir, 'haproxy.pem');
  writeFileSync(ctx.pem, Buffer.concat([readFileSync(pair.cert), readFileSync(pair.key)]));
});

test.after(async (ctx) => {
  ctx.instance.proc.kill('SIGTERM');
  await exitWithin(ctx.instance, 15_000);
});

/** Runs `body` with haproxy as shipped (HTTPS) in front of the instance alone, on a free port (its base URL given). */
async function throughHaproxy(ctx: { dir: string; port: number; pem: string; ca: Buffer }, body: (lb: string) => Promise<void>): Promise<void> {
  const [lb] = await freePorts(1);
  const haproxy = startHaproxy(ctx.dir, haproxyConfig({ front: lb, pem: ctx.pem, instances: [ctx.port] }), `haproxy-${lb}.cfg`);
  try {
    await eventually(async () => (await statusFrom('127.0.0.1', `https://127.0.0.1:${lb}/health`, [], ctx.ca).catch(() => 0)) === 200, 10_000, 'haproxy ready');
    await body(`https://127.0.0.1:${lb}`);
  } finally {
    await haproxy.stop();
  }
}

test('through haproxy as shipped, 12 clients in 12 /16 subnets that forge X-Forwarded-For: 1.1.1.1 get exactly 10 answers, then 403', async (ctx) => {
  await throughHaproxy(ctx, async (lb) => {
    const statuses: number[] = [];
    for (let i = 1; i <= 12; i++) statuses.push(await statusFrom(`127.${i}.0.1`, `${lb}/api?key=k&count=1`, ['1.1.1.1'], ctx.ca));
    assert.equal(statuses, [...Array(10).fill(200), 403, 403]);
  });
});

test('through haproxy as shipped, /metrics and /usage are refused, even to a client the instance would let read them', async (ctx) => {
  await throughHaproxy(ctx, async (lb) => {
    for (const path of ['/metrics', '/usage', '/metrics?x=1']) {
      assert.is(await statusFrom('127.0.0.1', `${lb}${path}`, [], ctx.ca), 403, `${path} through haproxy`);
      // The same client, on the instance's own port: loopback is in the default --metrics-allow.
      assert.is(await statusFrom('127.0.0.1', `http://127.0.0.1:${ctx.port}${path}`, []), 200, `${path} on the instance`);
    }
    assert.is(await statusFrom('127.0.0.1', `${lb}/api?key=k3&count=1`, [], ctx.ca), 200, '/api still passes');
  });
});

test('every line of the header is read as one list: the right-most untrusted address is the client', async (ctx) => {
  const api = `http://127.0.0.1:${ctx.port}/api?key=k2&count=1`;
  // Ten subnets, each named by the last of two lines; the first line is always the same forged address.
  for (let i = 1; i <= 10; i++) assert.is(await statusFrom('127.0.0.1', api, ['1.1.1.1', `127.${i}.0.1`]), 200, `subnet ${i}`);
  assert.is(await statusFrom('127.0.0.1', api, ['127.3.0.1']), 200, 'a subnet seen today passes');
  assert.is(await statusFrom('127.0.0.1', api, ['127.3.0.1', '1.1.1.1']), 403, 'an 11th subnet, named by the last line');
  assert.is(await statusFrom('127.0.0.1', api, ['127.3.0.1, 1.1.1.1']), 403, 'the same, in one line');
  // Trusted hops are passed over, right to left.
  assert.is(await statusFrom('127.0.0.1', api, ['127.4.0.1', '127.0.0.1']), 200, 'a trusted proxy after the client');
});

test.run();
