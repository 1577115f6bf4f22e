import { connect, type Socket } from 'node:net';

/** A request held on a connection of its own, and when and how it was answered. */
export interface Holder { socket: Socket; answeredAt: number; status: string; bytes: number; contentLength: number }

/**
 * Opens `n` loopback connections, the i-th sending `request(i)` (a whole
 * HTTP/1.1 request), a few hundred at a time (the listen backlog is finite).
 */
export async function holdRequests(port: number, n: number, request: (i: number) => string): Promise<Holder[]> {
  const holders: Holder[] = [];
  for (let i = 0; i < n; i += 250) {
    await Promise.all(Array.from({ length: Math.min(250, n - i) }, (_, k) => new Promise<void>((resolve, reject) => {
      const h: Holder = { socket: connect({ host: '127.0.0.1', port }), answeredAt: 0, status: '', bytes: 0, contentLength: -1 };
      h.socket.once('connect', () => {
        h.socket.write(request(i + k));
        resolve();
      });
      h.socket.once('error', reject);
      h.socket.on('data', (d) => {
        if (h.bytes === 0) {
          h.answeredAt = performance.now();
          h.status = d.toString('latin1', 9, 12);
          h.contentLength = Number(/\r\ncontent-length: *(\d+)/i.exec(d.toString('latin1', 0, 2048))?.[1] ?? -1);
        }
        h.bytes += d.length;
      });
      holders.push(h);
    })));
  }
  return holders;
}

/** The count of each status the holders got ('none' for no answer). */
export const statusCounts = (holders: readonly Holder[]): Record<string, number> =>
  holders.reduce<Record<string, number>>((m, h) => ({ ...m, [h.status || 'none']: (m[h.status || 'none'] ?? 0) + 1 }), {});

/** A series' value in the server's /metrics. */
export async function metricNow(port: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(new RegExp(`^${series} (\\S+)$`, 'm').exec(text)![1]);
}
