import { connect, type Socket } from 'node:net';

/** Sends one GET and gives the socket and a promise of the response head's end (headers, announced length). */
function open(port: number, path: string, headers: Record<string, string>): Socket {
  const socket = connect({ port, host: '127.0.0.1' });
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n${lines}\r\n`));
  socket.on('error', () => undefined);
  return socket;
}

/**
 * A client that reads a response until `fraction` of its body has come, then
 * stops reading and keeps the connection open. Resolves once it stopped,
 * with the bytes it got and a `close()`.
 */
export function readThenHold(port: number, path: string, fraction: number, timeoutMs = 60_000): Promise<{ received: number; expected: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const socket = open(port, path, {});
    let head = Buffer.alloc(0);
    let expected = -1;
    let received = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${received} of ${expected} bytes after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk) => {
      if (expected < 0) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = /content-length: (\d+)/i.exec(head.subarray(0, end).toString());
        if (!length) return reject(new Error(`no length: ${head.subarray(0, end).toString()}`));
        expected = Number(length[1]);
        received = head.length - end - 4;
      } else {
        received += chunk.length;
      }
      if (received >= expected * fraction) {
        socket.pause();
        clearTimeout(timer);
        resolve({ received, expected, close: () => socket.destroy() });
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (expected < 0 || received < expected * fraction) reject(new Error(`closed after ${received} of ${expected} bytes`));
    });
  });
}

/** A client that asks for `path` with these headers and goes away after `ms`, whatever it got. */
export function leaveAfter(port: number, path: string, ms: number, headers: Record<string, string> = {}): Promise<void> {
  return new Promise((resolve) => {
    const socket = open(port, path, headers);
    socket.on('data', () => undefined);
    setTimeout(() => {
      socket.destroy();
      resolve();
    }, ms);
  });
}

export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/**
 * The costliest requests the service accepts (docs/operations.md, Hostile
 * clients), each written whole: heads of up to 64 KiB and query strings of
 * up to 8 KiB with long lists of every parameter. A server that reads any
 * of them in more than linear time holds a serving thread.
 */
export function costlyRequests(key: string): Array<[string, string]> {
  const HOST = 'Host: localhost\r\n';
  const head = (lines: string, target = '/health'): string => `GET ${target} HTTP/1.1\r\n${HOST}${lines}\r\n`;
  const get = (target: string): string => `GET ${target} HTTP/1.1\r\n${HOST}\r\n`;
  const list = (name: string, item: (i: number) => string): string => {
    let q = `/api?key=${key}&${name}=`;
    for (let i = 0; q.length < 8000; i++) q += (i ? ',' : '') + item(i);
    return q;
  };
  const cases = (word: string, i: number): string => word.split('').map((c, j) => ((i >> j) & 1 ? c.toLowerCase() : c.toUpperCase())).join('');
  return [
    ['a Content-Length of 32,000 digits then 16,000 items', head(`Content-Length: ${'9'.repeat(32_000)}${',1'.repeat(16_000)}\r\n`)],
    ['30,000 Content-Length items that agree', head(`Content-Length: 0${',0'.repeat(30_000)}\r\n`)],
    ['1,000 X-Forwarded-For lines from a trusted peer', head(`X-Forwarded-For: ${Array.from({ length: 6 }, (_, i) => `10.0.${i}.1`).join(', ')}\r\n`.repeat(1000), `/api?key=${key}&count=1`)],
    ['an Accept-Encoding of 60 KB', head(`Accept-Encoding: ${'gzip;q=0.5;a=b, '.repeat(3700)}br\r\n`, `/api?key=${key}&count=1`)],
    ['an If-None-Match of 60 KB', head(`If-None-Match: ${'W/"abcdefghij", '.repeat(3700)}*\r\n`, `/api?key=${key}&count=1`)],
    ['a Host of 60 KB', `GET /health HTTP/1.1\r\nHost: ${'a'.repeat(60_000)}:\r\n\r\n`],
    ['city: case variants of one city', get(list('city', (i) => cases('moscow', i)))],
    ['city: distinct names', get(list('city', (i) => `c${i}`))],
    ['ip: IPv4 and IPv6 items', get(list('ip', (i) => (i % 2 ? `10.${i & 255}.0.1:${i}` : `2001:db8::${i.toString(16)}`)))],
    ['port: every port', get(list('port', (i) => String((i % 65535) + 1)))],
    ['country: codes again and again', get(`${list('country', (i) => ['us', 'US', 'de', 'Ru'][i % 4])}&cm=except`)],
    ['type, anon and service repeated', get(`${list('type', (i) => cases('socks5', i)).slice(0, 3000)}&anon=${'elite,'.repeat(300)}elite&service=${'google,'.repeat(250)}google`)],
    ['fields repeated, JSON', get(`${list('fields', (i) => ['ip', 'port', 'type', 'country'][i % 4])}&get=json&count=10`)],
  ];
}

/** Writes `bytes` on a new connection and closes it at the first byte back (or after `ms` without one): how long that took, in ms. */
export function firstByteBack(port: number, bytes: string | Buffer, ms = 5000): Promise<number> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(bytes));
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(performance.now() - started);
    };
    const timer = setTimeout(done, ms);
    socket.once('data', done);
    socket.once('close', done);
    socket.on('error', () => undefined);
  });
}
