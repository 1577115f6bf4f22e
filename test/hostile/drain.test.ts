import { connect, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitWithin, serveProcesses } from '../helpers/cli.js';
import { testEngine } from '../helpers/server.js';

/**
 * SIGTERM loses nothing (docs/operations.md, Draining): with clients that
 * keep their connections and send request after request, every request
 * that reaches the service is answered, every answer given while draining
 * says `Connection: close`, and the process exits once its connections are
 * done. Run five times over, with the default serving threads.
 *
 * A client told to close connects again at once. A connection the kernel
 * queued just before the listener closes is reset by the kernel, its
 * request never read: such resets are counted apart, and must come no
 * earlier than the listener's close (--drain-s after the signal).
 */

const RUNS = 5;
const CLIENTS = 8;
const DRAIN_MS = 1000;

interface Tally {
  answered: number;
  /** Requests written on a kept connection (one that had answers) that closed before their answer. */
  lost: number;
  /** Milliseconds after the signal at which a new connection closed before its first answer. */
  resets: number[];
  /** Answers later than a moment after the signal that kept the connection. */
  kept: number;
}

/** A client that sends request after request on one connection, a new one when told to close, until the port refuses it. */
function client(port: number, tally: Tally, signalledAt: () => number, until: number): Promise<void> {
  return new Promise((resolve) => {
    const open = (): void => {
      if (Date.now() > until) return resolve();
      let buffered = '';
      let outstanding = false;
      /** Answers on this connection, and whether the client closed it. */
      let answers = 0;
      let left = false;
      let refused = false;
      const send = (): void => {
        outstanding = true;
        socket.write('GET /api?key=k&count=5 HTTP/1.1\r\nHost: localhost\r\n\r\n');
      };
      const socket: Socket = connect({ port, host: '127.0.0.1' }, send);
      socket.on('data', (d: Buffer) => {
        buffered += d.toString('latin1');
        const headEnd = buffered.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buffered.slice(0, headEnd);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < headEnd + 4 + length) return;
        buffered = buffered.slice(headEnd + 4 + length);
        outstanding = false;
        answers++;
        tally.answered++;
        if (/\r\nconnection: close/i.test(head)) {
          left = true;
          socket.destroy();
          return open();
        }
        if (performance.now() > signalledAt() + 100) tally.kept++;
        send();
      });
      // Refused: the listener is closed, the service gone; no request was sent.
      socket.on('error', (err: NodeJS.ErrnoException) => (refused ||= err.code === 'ECONNREFUSED'));
      socket.on('close', () => {
        if (left) return;
        if (outstanding && answers > 0) tally.lost++;
        else if (outstanding) tally.resets.push(performance.now() - signalledAt());
        if (refused) resolve();
        else open();
      });
    };
    open();
  });
}

test(`SIGTERM under ${CLIENTS} keep-alive clients: no request lost, every answer while draining says Connection: close (${RUNS} runs)`, async () => {
  for (let run = 0; run < RUNS; run++) {
    const served = await serveProcesses(1, 2000, 30 + run, ['--drain-s', String(DRAIN_MS / 1000)]);
    const tally: Tally = { answered: 0, lost: 0, resets: [], kept: 0 };
    let signalledAt = Infinity;
    try {
      const clients = Array.from({ length: CLIENTS }, () => client(served.ports[0], tally, () => signalledAt, Date.now() + 20_000));
      await new Promise((r) => setTimeout(r, 300));
      const before = tally.answered;
      signalledAt = performance.now();
      served.children[0].proc.kill('SIGTERM');
      assert.is(await exitWithin(served.children[0], 20_000), 0, 'exited by itself');
      await Promise.all(clients);
      const resets = tally.resets.map((ms) => ms.toFixed(0)).join(', ') || 'none';
      console.log(`  ${testEngine().name}, run ${run + 1}: ${before} answered before the signal, ${tally.answered - before} after; lost ${tally.lost}; new connections reset at ${resets} ms`);
      assert.ok(before > 0 && tally.answered > before, 'served before and while draining');
      assert.is(tally.lost, 0, 'requests lost with their connection');
      assert.ok(tally.resets.every((ms) => ms >= DRAIN_MS - 100), `new connections reset before the listener closed: ${resets} ms`);
      assert.is(tally.kept, 0, 'answers while draining that kept their connection');
    } finally {
      await served.close();
    }
  }
});

test.run();
