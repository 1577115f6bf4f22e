import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, type TestServer } from '../helpers/server.js';

/** Reads a whole HTTP/1.1 response slowly: small reads with pauses, so the server meets backpressure. */
function slowGet(port: number, path: string, pauseMs: number): Promise<{ head: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let received = 0;
    let expected = -1;
    let headerEnd = -1;
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      received += chunk.length;
      if (headerEnd < 0) {
        const all = Buffer.concat(chunks);
        headerEnd = all.indexOf('\r\n\r\n');
        if (headerEnd >= 0) expected = headerEnd + 4 + Number(/content-length: (\d+)/i.exec(all.subarray(0, headerEnd).toString())![1]);
      }
      if (expected >= 0 && received >= expected) {
        socket.destroy();
        const all = Buffer.concat(chunks);
        resolve({ head: all.subarray(0, headerEnd).toString(), body: all.subarray(headerEnd + 4) });
        return;
      }
      socket.pause();
      setTimeout(() => socket.resume(), pauseMs);
    });
    socket.on('error', reject);
  });
}

const test = suite<{ t: TestServer }>('large bodies');
test.before(async (ctx) => {
  const snapshot = encodeSnapshot(generateRecords({ records: 20000, seed: 21, now: TEST_NOW_S }), TEST_NOW_S);
  ctx.t = await startTestServer({ snapshot });
});
test.after((ctx) => ctx.t.close());

test('a body of several megabytes reaches a slow reader whole, while others are answered', async ({ t }) => {
  const path = `/api?key=${TEST_KEY}&get=json&time=99999`;
  const fast = Buffer.from(await (await t.get(path)).arrayBuffer());
  assert.ok(fast.length > 5_000_000, `body is only ${fast.length} bytes`);
  const slow = slowGet(t.server.port, path, 2);
  // Meanwhile another client is served (and reuses the render buffer).
  for (let i = 0; i < 20; i++) assert.is((await t.api('count=5&type=http')).status, 200);
  const { head, body } = await slow;
  assert.match(head, 'HTTP/1.1 200 OK');
  assert.is(body.length, fast.length);
  assert.ok(body.equals(fast), 'the slow body equals the fast one');
});

test('the same holds with the cache off (the body is copied out of the reused buffer)', async ({ t }) => {
  await t.close();
  const snapshot = encodeSnapshot(generateRecords({ records: 20000, seed: 21, now: TEST_NOW_S }), TEST_NOW_S);
  t = await startTestServer({ snapshot, options: { cacheBytes: 0 } });
  const path = `/api?key=${TEST_KEY}&time=99999&type_prefix=1`;
  const fast = Buffer.from(await (await t.get(path)).arrayBuffer());
  const slow = slowGet(t.server.port, path, 2);
  for (let i = 0; i < 10; i++) assert.is((await t.get(`/api?key=${TEST_KEY}&get=json&time=99999&pretty=0&count=${1000 + i}`)).status, 200);
  const { body } = await slow;
  assert.ok(body.equals(fast), 'the slow body equals the fast one');
  await t.close();
});

test.run();
