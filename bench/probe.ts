/**
 * A small-query prober in a process of its own, so that what the other
 * clients of a benchmark cost their own event loop never shows as the
 * server's latency: one keep-alive loopback connection, one GET at a time,
 * each timed from its write to the last byte of its body, 20 ms apart.
 * Prints the latencies in milliseconds, sorted, as JSON.
 * Run: node dist/bench/probe.js PORT PATH MS
 */
import { connect } from 'node:net';

const [port, path, ms] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
const socket = connect({ host: '127.0.0.1', port, noDelay: true });
await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));

/** Sends one request and resolves when its whole answer has arrived. */
function ask(): Promise<void> {
  return new Promise((resolve, reject) => {
    let head = '';
    let body = -1;
    let got = 0;
    const onData = (d: Buffer): void => {
      if (body < 0) {
        head += d.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(`a small query got ${head.slice(0, 12)}`));
        body = Number(/\r\ncontent-length: *(\d+)/i.exec(head)![1]);
        got = head.length - end - 4;
      } else got += d.length;
      if (got >= body) {
        socket.off('data', onData);
        resolve();
      }
    };
    socket.on('data', onData);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  });
}

const latencies: number[] = [];
const until = performance.now() + ms;
while (performance.now() < until) {
  const began = performance.now();
  await ask();
  latencies.push(performance.now() - began);
  await new Promise((r) => setTimeout(r, 20));
}
socket.destroy();
process.stdout.write(JSON.stringify(latencies.sort((a, b) => a - b)));
