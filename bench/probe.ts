/**
 * A timed client in a process of its own, so that what the other clients of
 * a benchmark cost their own event loop never shows as the server's latency:
 * keep-alive loopback connections, each sending one GET at a time, rotating
 * through the paths (each connection from its own offset), every request
 * timed from its write to the last byte of its body.
 * Writes one JSON object to OUT: `samples`, one [path index, start ms since
 * the prober began, latency ms, body bytes] per answer.
 * Run: node dist/bench/probe.js PORT MS OUT [--pause MS] [--connections N] [--header 'Name: value'] PATH...
 */
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

const [port, ms, out] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const rest = process.argv.slice(5);
const flag = (name: string, fallback: string): string => {
  const at = rest.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const [value] = rest.splice(at, 2).slice(1);
  return value;
};
const pauseMs = Number(flag('pause', '0'));
const connections = Number(flag('connections', '1'));
const header = flag('header', '');
const paths = rest;
const extra = header === '' ? '' : `${header}\r\n`;

type Sample = [number, number, number, number];
const samples: Sample[] = [];
const began = performance.now();
const until = began + ms;

/** Sends one request on `socket` and resolves with its body's length once the whole answer has arrived. */
function ask(socket: Socket, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let head = '';
    let body = -1;
    let got = 0;
    const onData = (d: Buffer): void => {
      if (body < 0) {
        head += d.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(`${path} got ${head.slice(0, 12)}`));
        body = Number(/\r\ncontent-length: *(\d+)/i.exec(head)![1]);
        got = head.length - end - 4;
      } else got += d.length;
      if (got >= body) {
        socket.off('data', onData);
        resolve(body);
      }
    };
    socket.on('data', onData);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`);
  });
}

async function client(offset: number): Promise<void> {
  const socket = connect({ host: '127.0.0.1', port, noDelay: true });
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  for (let i = offset; performance.now() < until; i++) {
    const index = i % paths.length;
    const start = performance.now();
    const bytes = await ask(socket, paths[index]);
    samples.push([index, start - began, performance.now() - start, bytes]);
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  socket.destroy();
}

await Promise.all(Array.from({ length: connections }, (_, c) => client(c * 7)));
writeFileSync(out, JSON.stringify({ samples }));
