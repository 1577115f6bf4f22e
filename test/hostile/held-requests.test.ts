import { connect, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MB, rssBytes } from '../../support/process-stats.js';
import { serveProcesses } from '../helpers/cli.js';
import { testEngine } from '../helpers/server.js';

/**
 * Requests held with `wait` are bounded, whatever one client does
 * (docs/api.md, ETag and wait): a connection holds at most one, what it
 * pipelines behind it is not served (nor read, on the node engine) until
 * that one is answered, and the process holds at most --max-held. The
 * server runs as a command, so that its memory is its own.
 */

const QUERY = '/api?key=k&type=socks5&count=5&wait=60';

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}

/** The held request's head: the query's own ETag, so that it waits. */
async function heldHead(port: number): Promise<string> {
  const etag = (await fetch(`http://127.0.0.1:${port}${QUERY}`)).headers.get('etag')!;
  return `GET ${QUERY} HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: ${etag}\r\n\r\n`;
}

/** Asks /health every 50 ms for `ms`: the longest answer, in ms. */
async function slowestHealth(port: number, ms: number): Promise<number> {
  let slowest = 0;
  for (const end = Date.now() + ms; Date.now() < end;) {
    const started = performance.now();
    await (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5000) })).text();
    slowest = Math.max(slowest, performance.now() - started);
    await new Promise((r) => setTimeout(r, 50));
  }
  return slowest;
}

const opened = (port: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });

test('100,000 wait requests pipelined on one connection that reads nothing: one held, memory and /health unmoved, and after the close', async () => {
  const served = await serveProcesses(1, 2000, 11);
  const [port] = served.ports;
  const socket = await opened(port);
  socket.on('error', () => undefined);
  try {
    const head = await heldHead(port);
    const before = rssBytes(served.children[0].proc.pid!);
    // Written until the socket takes no more (the server stopped reading), for 8 s at most.
    let sent = 0;
    socket.pause();
    await new Promise<void>((resolve) => {
      const stop = setTimeout(resolve, 8000);
      const write = (): void => {
        while (sent < 100_000) {
          sent++;
          if (!socket.write(head)) {
            socket.once('drain', write);
            return;
          }
        }
        clearTimeout(stop);
        resolve();
      };
      write();
    });
    const slowest = await slowestHealth(port, 3000);
    const held = await metric(port, 'proxylist_requests_held');
    const grown = (rssBytes(served.children[0].proc.pid!) - before) / MB;
    console.log(`  ${testEngine().name}: ${sent} requests written, ${held} held, RSS +${grown.toFixed(1)} MB, /health at worst ${slowest.toFixed(1)} ms`);
    assert.ok(held <= 1, `${held} held for one connection`);
    // The node engine stops reading (and closes once a request cut by its last read is not whole within 10 s); uWebSockets.js closes at once.
    assert.ok(sent < 100_000, 'the server read on');
    assert.ok(grown < 60, `RSS grew by ${grown.toFixed(1)} MB`);
    assert.ok(slowest < 1000, `/health took ${slowest.toFixed(0)} ms`);
    socket.destroy();
    const after = await slowestHealth(port, 6000);
    assert.ok(after < 1000, `/health took ${after.toFixed(0)} ms after the close`);
  } finally {
    socket.destroy();
    await served.close();
  }
});

test('--max-held 1000 and 2,000 connections with a wait request each: 1,000 held, the others answered at once as if without wait', async () => {
  const served = await serveProcesses(1, 2000, 12, ['--drain-s', '0', '--max-held', '1000']);
  const [port] = served.ports;
  const sockets: Socket[] = [];
  try {
    const head = await heldHead(port);
    let answered = 0;
    for (let i = 0; i < 2000; i++) {
      const s = await opened(port);
      s.on('error', () => undefined);
      s.on('data', (d: Buffer) => (answered += d.toString('latin1').split('HTTP/1.1 304 ').length - 1));
      s.write(head);
      sockets.push(s);
    }
    const settled = Date.now() + 10_000;
    while (answered < 1000 && Date.now() < settled) await new Promise((r) => setTimeout(r, 50));
    assert.is(answered, 1000, '304s answered at once');
    assert.is(await metric(port, 'proxylist_requests_held'), 1000);
    assert.is(await metric(port, 'proxylist_held_overflow_total'), 1000);
    for (const s of sockets) s.destroy();
    const slowest = await slowestHealth(port, 1000);
    assert.ok(slowest < 1000, `/health took ${slowest.toFixed(0)} ms as 1,000 held requests were let go`);
  } finally {
    for (const s of sockets) s.destroy();
    await served.close();
  }
});

test.run();
