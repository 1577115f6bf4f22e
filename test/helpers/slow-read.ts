import { connect } from 'node:net';

export interface SlowRead {
  head: string;
  body: Buffer;
  /** Bytes read while the rate limit was on. */
  slowBytes: number;
}

/** Reads a response at `bytesPerSecond` for `slowMs`, then as fast as it comes. */
export function slowRead(port: number, path: string, bytesPerSecond: number, slowMs: number): Promise<SlowRead> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let received = 0;
    let expected = -1;
    let headEnd = -1;
    let slowBytes = -1;
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
        resolve({ head: all.subarray(0, headEnd).toString(), body: all.subarray(headEnd + 4), slowBytes: slowBytes < 0 ? received : slowBytes });
        return;
      }
      const elapsed = Date.now() - started;
      if (elapsed >= slowMs) {
        if (slowBytes < 0) slowBytes = received;
        return;
      }
      // Ahead of the allowed rate: stop reading until the rate catches up.
      const dueMs = (received / bytesPerSecond) * 1000 - elapsed;
      if (dueMs > 0) {
        socket.pause();
        setTimeout(() => socket.resume(), Math.min(dueMs, slowMs - elapsed));
      }
    });
    socket.on('error', reject);
  });
}
