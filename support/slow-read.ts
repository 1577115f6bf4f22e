import { connect } from 'node:net';

export interface ThrottledRead {
  head: string;
  body: Buffer;
  /** Bytes received when `throttle` first answered null. */
  throttledBytes: number;
}

/**
 * Reads one response, holding back after each chunk for as long as
 * `throttle(received, elapsedMs)` says; once it answers null, reads freely.
 * Fails if the server closes the connection before the whole body came, or
 * if it has not come within `timeoutMs`.
 */
export function throttledRead(port: number, path: string, throttle: (received: number, elapsedMs: number) => number | null, timeoutMs = 90_000): Promise<ThrottledRead> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const deadline = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${received} of ${expected} bytes after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('close', () => clearTimeout(deadline));
    const chunks: Buffer[] = [];
    let received = 0;
    let expected = -1;
    let headEnd = -1;
    let throttledBytes = -1;
    const started = Date.now();
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      received += chunk.length;
      if (headEnd < 0) {
        const all = Buffer.concat(chunks);
        headEnd = all.indexOf('\r\n\r\n');
        if (headEnd >= 0) expected = headEnd + 4 + Number(/content-length: (\d+)/i.exec(all.subarray(0, headEnd).toString())![1]);
      }
      if (expected >= 0 && received >= expected) {
        socket.destroy();
        const all = Buffer.concat(chunks);
        resolve({ head: all.subarray(0, headEnd).toString(), body: all.subarray(headEnd + 4), throttledBytes: throttledBytes < 0 ? received : throttledBytes });
        return;
      }
      if (throttledBytes >= 0) return;
      const delayMs = throttle(received, Date.now() - started);
      if (delayMs === null) throttledBytes = received;
      else if (delayMs > 0) {
        socket.pause();
        setTimeout(() => socket.resume(), delayMs);
      }
    });
    socket.on('close', () => {
      if (expected < 0 || received < expected) reject(new Error(`the server closed the connection after ${received} of ${expected} bytes`));
    });
    socket.on('error', reject);
  });
}

/** A reader at `bytesPerSecond` for `slowMs` (or to the end), then free. */
export const atRate = (bytesPerSecond: number, slowMs = Number.POSITIVE_INFINITY) =>
  (received: number, elapsedMs: number): number | null =>
    elapsedMs >= slowMs ? null : Math.min(Math.max(0, (received / bytesPerSecond) * 1000 - elapsedMs), slowMs - elapsedMs);
