import { connect, type Socket } from 'node:net';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { RawConnection } from '../helpers/raw-http.js';
import { atRate, throttledRead } from '../../support/slow-read.js';
import { TEST_KEY, TEST_NOW_S, eventually, type TestServer, serverSuite } from '../helpers/server.js';

/**
 * Slow and abusive clients: a slow reader of a 20 MB body, clients that walk
 * away mid-body, and thousands of idle connections. Others keep being served.
 */
const snapshot = encodeSnapshot(generateRecords({ records: 65_000, seed: 21, now: TEST_NOW_S }), TEST_NOW_S);
const DUMP = `/api?key=${TEST_KEY}&get=json&time=99999`;
const SMALL = 'type=http&count=100&get=json';


for (const cache of [true, false]) {
  const test = serverSuite(`a slow reader (cache ${cache ? 'on' : 'off'})`, () => ({ snapshot, options: cache ? {} : { cacheBytes: 0 } }));

  test('reads a 20 MB dump at 100 KB/s, then gets all of it, while another client keeps getting right answers', async ({ t }) => {
    const whole = Buffer.from(await (await t.get(DUMP)).arrayBuffer());
    assert.ok(whole.length > 20_000_000, `the dump is only ${whole.length} bytes`);
    const small = await (await t.api(SMALL)).text();
    const slow = throttledRead(t.server.port, DUMP, atRate(100_000, 3000));
    let slowDone = false;
    void slow.then(() => (slowDone = true), () => (slowDone = true));
    const other = await RawConnection.open(t.server.port);
    for (let i = 0; i < 50; i++) {
      const res = await other.request(`/api?key=${TEST_KEY}&${SMALL}`);
      assert.is(res.status, 200);
      assert.is(res.body.toString(), small);
    }
    other.close();
    // A server stalled behind the slow reader would answer the others only once it had read its 20 MB.
    assert.not.ok(slowDone, 'the others were answered while the slow reader read');
    const { head, body, throttledBytes: slowBytes } = await slow;
    assert.match(head, 'HTTP/1.1 200 OK');
    assert.ok(slowBytes < 3 * 100_000 * 2, `${slowBytes} bytes read in the slow phase: the reader was not slow`);
    assert.ok(body.equals(whole), 'the slow body equals the fast one');
  });

  const pendingCases = [
    {
      name: 'a body streamed in chunks to a slow reader keeps its own rows and buffer while other queries select and render theirs',
      pending: DUMP,
      // Most rows of the store, in another order than the dump's: a stream still reading the shared selection would change.
      next: `/api?key=${TEST_KEY}&type=http,https,socks4&time=99999`,
    },
    {
      name: 'a body rendered whole and pending for a slow reader is not written over by the next answers, rendered in the same reused buffer',
      // With the envelope, so rendered whole; the next answers land in the buffer it was rendered into, once it is given back.
      pending: `/api?key=${TEST_KEY}&get=json&wrap=1&time=99999`,
      next: `/api?key=${TEST_KEY}&get=json&wrap=1&pretty=0&type=socks5&time=99999`,
    },
  ];
  for (const { name, pending, next } of pendingCases) {
    test(name, async ({ t }) => {
      const normalize = (b: Buffer) => b.toString().replace(/"timestamp": ?"[^"]+"/, '"timestamp":"T"');
      const whole = normalize(Buffer.from(await (await t.get(pending)).arrayBuffer()));
      const nextWhole = normalize(Buffer.from(await (await t.get(next)).arrayBuffer()));
      const slow = throttledRead(t.server.port, pending, atRate(200_000, 2000));
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let i = 0; i < 3; i++) assert.ok(normalize(Buffer.from(await (await t.get(next)).arrayBuffer())) === nextWhole);
      const { body, throttledBytes } = await slow;
      assert.ok(throttledBytes < whole.length / 2, `${throttledBytes} bytes read while slow: the body was not pending`);
      assert.ok(normalize(body) === whole, 'the slow body equals the fast one');
    });
  }

  // The engine's idle timeout does not depend on where the body comes from: the streamed production (cache off) is the case kept.
  if (!cache) test('a reader that stops for 15 s mid-body, longer than the idle timeout of uWebSockets.js, still gets all of it', async ({ t }) => {
    const whole = Buffer.from(await (await t.get(DUMP)).arrayBuffer());
    let paused = false;
    const { body } = await throttledRead(t.server.port, DUMP, (received) => {
      if (paused || received < 1_000_000) return 0;
      paused = true;
      return 15_000;
    });
    assert.ok(body.equals(whole), 'the whole body after the pause');
  });

  test.run();
}

// What happens inside one serving thread (its cache, its productions): one thread.
const narrowed = serverSuite('a slow reader of a narrowed body', () => ({ snapshot, options: { threads: 1 } }));

narrowed('gets a view of the cached rows still in the window, then the close, byte for byte as the reference writes them', async ({ t }) => {
  const query = 'get=json&time=3000';
  const wide = await (await t.api(query)).text();
  t.clock.advance(30_000);
  const hits = t.server.bodies.cacheHits;
  const { body } = await throttledRead(t.server.port, `/api?key=${TEST_KEY}&${query}`, atRate(2_000_000, 3000));
  assert.is(t.server.bodies.cacheHits, hits + 1, 'answered from the cached body');
  const want = NaiveEngine.fromFile(snapshot).answer(`key=x&${query}`, t.clock.nowMs()).body;
  assert.ok(want.length > 10_000_000 && want.length < wide.length, `the narrowed body is ${want.length} bytes, the wide one ${wide.length}`);
  if (body.toString() !== want) assert.fixture(body.toString().slice(-300), want.slice(-300), 'the narrowed body');
});

narrowed.run();

const abort = serverSuite('clients that walk away', () => ({ snapshot, options: { cacheBytes: 0 } }));

const streamingGauge = async (t: TestServer) => Number(/^proxylist_responses_streaming (\d+)$/m.exec(await (await t.get('/metrics')).text())![1]);

abort('200 clients that abort a 20 MB body after 64 KB leave no response behind and no memory held', async ({ t }) => {
  const rssBefore = process.memoryUsage().rss;
  for (let i = 0; i < 200; i++) {
    await new Promise<void>((resolve, reject) => {
      const socket: Socket = connect({ port: t.server.port, host: '127.0.0.1' });
      let received = 0;
      socket.on('connect', () => socket.write(`GET ${DUMP}&_=${i} HTTP/1.1\r\nHost: test\r\n\r\n`));
      socket.on('data', (chunk) => {
        received += chunk.length;
        if (received >= 65_536) {
          socket.resetAndDestroy();
          resolve();
        }
      });
      socket.on('error', reject);
    });
  }
  // Each render's unsent rest is a copy of about 20 MB: 200 kept would be 4 GB.
  await eventually(async () => (await streamingGauge(t)) === 0, 10_000, 'no response left streaming');
  const grownMb = (process.memoryUsage().rss - rssBefore) / 1e6;
  assert.ok(grownMb < 1000, `RSS grew by ${grownMb.toFixed(0)} MB`);
  const res = await t.api('count=3');
  assert.is(res.status, 200);
  assert.is((await res.text()).split('\n').length, 4);
});

abort('clients that pipeline 100 requests and reset leave no answer pending', async ({ t }) => {
  const pipelined = `GET /api?key=${TEST_KEY}&count=1 HTTP/1.1\r\nHost: test\r\n\r\n`.repeat(100);
  // Reset as soon as the requests are written, or a moment later: the service reads them and answers to a socket that is gone.
  for (const delayMs of [0, 1, 5]) {
    await Promise.all(Array.from({ length: 20 }, () => new Promise<void>((resolve, reject) => {
      const socket: Socket = connect({ port: t.server.port, host: '127.0.0.1' });
      socket.on('connect', () => socket.write(pipelined, () => setTimeout(() => {
        socket.resetAndDestroy();
        resolve();
      }, delayMs)));
      socket.on('error', reject);
    })));
  }
  // Answers queued for a connection that is gone would stay counted until they were given up, a minute later.
  await eventually(async () => (await streamingGauge(t)) === 0, 3000, 'no answer left pending');
});

abort.run();

const idle = serverSuite('idle connections', () => ({ snapshot }));

idle('5,000 idle keep-alive connections do not stop service to others', async ({ t }) => {
  const idlers: RawConnection[] = [];
  try {
    // Each makes one request and then holds its connection open, idle.
    for (let i = 0; i < 5000; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => RawConnection.open(t.server.port)));
      await Promise.all(batch.map((c) => c.request('/health')));
      idlers.push(...batch);
    }
    const small = await (await t.api(SMALL)).text();
    const other = await RawConnection.open(t.server.port);
    for (let i = 0; i < 200; i++) {
      const res = await other.request(`/api?key=${TEST_KEY}&${SMALL}`);
      assert.is(res.status, 200);
      assert.is(res.body.toString(), small);
    }
    other.close();
    // The idle ones still work too.
    const some = await Promise.all(idlers.slice(0, 50).map((c) => c.request('/health')));
    for (const res of some) assert.is(res.status, 200);
  } finally {
    for (const c of idlers) c.close();
  }
});

idle.run();
