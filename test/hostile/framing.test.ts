import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { serveProcesses } from '../helpers/cli.js';
import { testEngine } from '../helpers/server.js';
import { suite } from 'uvu';

/**
 * Request framing RFC 9112 calls invalid (docs/operations.md, Memory, hostile clients and secrets): two
 * Content-Length headers that disagree get 400 and a closed connection, and
 * nothing read after them on that connection is served. A request
 * smuggled behind them would otherwise be answered.
 */
const test = suite<{ port: number; close(): Promise<void> }>('request framing');
test.before(async (ctx) => {
  const s = await serveProcesses(1, 200, 8);
  ctx.port = s.ports[0];
  ctx.close = s.close;
});
test.after((ctx) => ctx.close());

/** Sends raw bytes; resolves with the status lines received and whether the server closed the connection within a second. */
function exchange(port: number, bytes: string): Promise<{ statuses: string[]; bodies: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let got = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses: got.split(/\r?\n/).filter((l) => l.startsWith('HTTP/1.1')), bodies: got, closed });
    };
    const timer = setTimeout(() => done(false), 1000);
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.on('end', () => done(true));
    socket.on('error', () => done(true));
  });
}

const API = 'GET /api?key=k&count=1 HTTP/1.1\r\nHost: test\r\n';

test('two Content-Length headers that disagree: 400, and the connection closed', async ({ port }) => {
  const r = await exchange(port, `${API}Content-Length: 0\r\nContent-Length: 44\r\n\r\n`);
  assert.equal(r.statuses, ['HTTP/1.1 400 Bad Request']);
  assert.match(r.bodies, 'Error: Invalid request framing');
  assert.ok(r.closed, 'the connection is closed');
});

test('a request pipelined behind them is never served', async ({ port }) => {
  const r = await exchange(port, `${API}Content-Length: 0\r\nContent-Length: 44\r\n\r\n${API}\r\n`);
  assert.ok(r.statuses.length >= 1 && r.statuses.every((s) => s === 'HTTP/1.1 400 Bad Request'), JSON.stringify(r.statuses));
  assert.ok(r.closed, 'the connection is closed');
});

test('a Content-Length that is not a number: 400', async ({ port }) => {
  const r = await exchange(port, `${API}Content-Length: 0\r\nContent-Length: 1e3\r\n\r\n`);
  assert.equal(r.statuses, ['HTTP/1.1 400 Bad Request']);
});

test('the same Content-Length twice: uws serves both requests on the kept connection; Node\'s parser refuses it (RFC 9110 8.6 allows either) with 400 and a close', async ({ port }) => {
  const r = await exchange(port, `${API}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc${API}\r\n`);
  if (testEngine().name === 'node') {
    assert.equal(r.statuses, ['HTTP/1.1 400 Bad Request']);
    assert.ok(r.closed);
  } else {
    assert.equal(r.statuses, ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    assert.not.ok(r.closed);
  }
});

test.run();
