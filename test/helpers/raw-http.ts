import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Map<string, string>;
  /** The lines of the head as they came, the status line first. */
  lines: string[];
  body: Buffer;
}

/**
 * One keep-alive HTTP/1.1 connection that sends request targets as raw bytes
 * (fetch and node:http escape or refuse what a hostile client would send) and
 * reads responses framed by Content-Length, one request at a time.
 */
export class RawConnection {
  private pending = Buffer.alloc(0);
  private waiting: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | null = null;
  /** The response being read answers a HEAD: it has no body, whatever its length says. */
  private headOnly = false;
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk) => {
      this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
      this.deliver();
    });
    const fail = (why: string) => {
      this.closed = true;
      this.waiting?.reject(new Error(why));
      this.waiting = null;
    };
    socket.on('close', () => fail('the server closed the connection'));
    socket.on('error', (e) => fail(e.message));
  }

  static open(port: number, host = '127.0.0.1'): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, noDelay: true });
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Sends one request (with `headers`, lines that each end in CRLF); fails if no whole response arrives within `timeoutMs`. */
  request(target: Buffer | string, method = 'GET', timeoutMs = 5000, headers = ''): Promise<RawResponse> {
    if (this.closed) return Promise.reject(new Error('the connection is closed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        this.socket.destroy();
        reject(new Error(`no response within ${timeoutMs} ms`));
      }, timeoutMs);
      this.headOnly = method === 'HEAD';
      this.waiting = {
        resolve: (r) => { clearTimeout(timer); resolve(r); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      };
      this.socket.write(Buffer.concat([
        Buffer.from(`${method} `),
        typeof target === 'string' ? Buffer.from(target) : target,
        Buffer.from(` HTTP/1.1\r\nHost: test\r\n${headers}\r\n`),
      ]));
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private deliver(): void {
    if (!this.waiting) return;
    const headEnd = this.pending.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const lines = this.pending.subarray(0, headEnd).toString('latin1').split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
    }
    const length = this.headOnly || status === 304 ? 0 : Number(headers.get('content-length') ?? NaN);
    if (!Number.isInteger(length)) {
      this.waiting.reject(new Error(`no Content-Length in: ${lines.join(' | ')}`));
      this.waiting = null;
      return;
    }
    const end = headEnd + 4 + length;
    if (this.pending.length < end) return;
    const body = Buffer.from(this.pending.subarray(headEnd + 4, end));
    this.pending = this.pending.subarray(end);
    const { resolve } = this.waiting;
    this.waiting = null;
    resolve({ status, headers, lines, body });
  }
}

/** What came back to bytes written raw on a new connection: every status line in order, the whole text, and when the first byte came. */
export interface RawExchange {
  statuses: number[];
  text: string;
  /** Milliseconds from the write to the first byte back; null if none came. */
  firstByteMs: number | null;
  /** The server closed the connection within the wait. */
  closed: boolean;
}

/**
 * Writes `bytes` on a new connection (TLS when `tls` gives the authority
 * to trust), and half-closes it after them with `halfClose`, and collects what comes back for `waitMs` at most, or until the
 * server closes: a request that gets no answer shows as no status.
 */
export function rawExchange(port: number, bytes: string | Buffer, o: { tls?: { ca: Buffer }; waitMs?: number; halfClose?: boolean } = {}): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = o.tls ? tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: o.tls.ca }) : connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let wroteAt = 0;
    let firstByteMs: number | null = null;
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ statuses: [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1])), text, firstByteMs, closed });
    };
    const timer = setTimeout(() => done(false), o.waitMs ?? 5000);
    socket.once(o.tls ? 'secureConnect' : 'connect', () => {
      wroteAt = performance.now();
      // Half-closed: the client says it sends nothing more, and reads on.
      if (o.halfClose) socket.end(bytes);
      else socket.write(bytes);
    });
    socket.on('data', (d: Buffer) => {
      firstByteMs ??= performance.now() - wroteAt;
      chunks.push(d);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => done(true));
  });
}
