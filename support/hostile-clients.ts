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
