import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

/**
 * Stopping Node's reading of one connection's requests: the one thing the
 * node engine needs that Node's documented API does not give. Node parses
 * requests in C++ straight from the socket, so `socket.pause()` alone does
 * not stop them; Node stops them itself, for a client that reads none of
 * its answers, when it finds `_paused` set on the socket once a read is
 * parsed, and resumes the parser and reads on when it is cleared. Both are
 * private: `checkReadStop` tries them once at start on a loopback server
 * of its own, and where they do not work the engine does what uWebSockets.js
 * does (it closes a connection that pipelines behind a held request).
 */
type NodeSocket = Socket & { _paused?: boolean; parser?: { resume?(): void } | null };

export function stopReading(socket: Socket): void {
  (socket as NodeSocket)._paused = true;
  socket.pause();
}

export function readAgain(socket: Socket): void {
  (socket as NodeSocket)._paused = false;
  (socket as NodeSocket).parser?.resume?.();
  socket.resume();
}

/** What the check found: each a thing that works here, or a sentence for the log saying what the engine does instead. */
export interface ReadStopCheck {
  /** Reading stops behind a held request, and every request behind it is answered once it is. */
  readonly stops: boolean;
  /** An HTTP/1.1 answer whose Connection header was removed carries no Connection line (uWebSockets.js sends none). */
  readonly omitsConnection: boolean;
}

/** Requests the check pipelines behind its held one: more than one read of Node's (64 KiB) holds. */
const PIPELINED = 4000;
const PROBE_REQUEST = 'GET /p HTTP/1.1\r\nHost: probe\r\n\r\n';
/** How long the check may take before it counts as failed. */
const CHECK_MS = 3000;

let checked: Promise<ReadStopCheck> | null = null;

const NOTHING_WORKS: ReadStopCheck = { stops: false, omitsConnection: false };

/**
 * The check, once per thread: a loopback server that holds its first
 * request while PIPELINED more arrive in one write. It runs on a thread of
 * its own, so that the thread that serves never runs Node's http code on
 * other shapes of requests and answers than its own (bench/README.md,
 * Nothing given back: hostile bytes and the node engine on its public API).
 */
export function checkReadStop(): Promise<ReadStopCheck> {
  return (checked ??= new Promise((resolve) => {
    const worker = new Worker(new URL('./read-stop-check.js', import.meta.url));
    worker.once('message', (check: ReadStopCheck) => resolve(check));
    worker.once('error', () => resolve(NOTHING_WORKS));
    worker.once('exit', () => resolve(NOTHING_WORKS));
  }));
}

/** The check itself, on the thread that calls it. */
export function runCheck(): Promise<ReadStopCheck> {
  return new Promise((resolve) => {
    const server = createServer({ keepAliveTimeout: 5000 });
    let held: ServerResponse | null = null;
    const queued: ServerResponse[] = [];
    let arrived = 0;
    let arrivedWhileHeld = 0;
    let stoppedAt = -1;
    let client: Socket | null = null;
    let done = false;
    const finish = (stops: boolean, omitsConnection: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(limit);
      client?.destroy();
      server.closeAllConnections();
      server.close();
      resolve({ stops, omitsConnection });
    };
    const limit = setTimeout(() => finish(false, false), CHECK_MS);
    const release = (): void => {
      // Reading stopped if fewer than all arrived while the first was held.
      stoppedAt = arrivedWhileHeld;
      const res = held!;
      held = null;
      res.removeHeader('Connection');
      res.end('held');
      for (const r of queued.splice(0)) r.end('ok');
      readAgain(res.socket!);
    };
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      arrived++;
      if (arrived === 1) {
        held = res;
        setTimeout(release, 50).unref();
        return;
      }
      if (held !== null) {
        arrivedWhileHeld++;
        queued.push(res);
        stopReading(req.socket);
        return;
      }
      res.end('ok');
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      const STATUS = 'HTTP/1.1 200';
      let tail = '';
      let answers = 0;
      let omitsConnection: boolean | null = null;
      client = connect(port, '127.0.0.1', () => client!.write(PROBE_REQUEST.repeat(PIPELINED + 1)));
      client.setEncoding('latin1');
      client.on('error', () => finish(false, false));
      client.on('data', (chunk: string) => {
        const text = tail + chunk;
        // The first answer is the held one: its head says whether the Connection line was left out.
        if (omitsConnection === null && text.includes('\r\n\r\n')) omitsConnection = !/\r\nconnection:/i.test(text.slice(0, text.indexOf('\r\n\r\n')));
        for (let i = text.indexOf(STATUS); i >= 0; i = text.indexOf(STATUS, i + 1)) answers++;
        // A tail shorter than a status line cannot hold one already counted.
        tail = text.slice(-(STATUS.length - 1));
        if (answers >= PIPELINED + 1) finish(stoppedAt >= 0 && stoppedAt < PIPELINED, omitsConnection === true);
      });
    });
    server.on('error', () => finish(false, false));
  });
}
