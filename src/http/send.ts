import type { HttpResponse } from './uws.js';

export type Headers = ReadonlyArray<readonly [string, string]>;

/**
 * The status of the response sent last. Handlers answer synchronously, so the
 * app's guard reads it right after a handler returns to count the response.
 */
export let lastStatus = '';
/** The body length of that response. */
export let lastBytes = 0;
/** Responses sent so far: a handler that sent none answers later, asynchronously. */
export let sentCount = 0;

const TEXT = 'text/plain; charset=utf-8';

/**
 * Marks a response as handled asynchronously: from now on it may be aborted
 * by the client, and nothing may touch it after that.
 */
export function watchAbort(res: HttpResponse): void {
  if (res.abortWatched) return;
  res.abortWatched = true;
  res.onAborted(() => {
    res.aborted = true;
    finish(res);
  });
}

/** A body the socket could not take at once: its unsent rest, and the client's progress. */
interface Pending {
  rest: Uint8Array;
  /** The write offset at which `rest` begins. */
  restBase: number;
  /** For a body written in chunks: writes the next one once `rest` is sent (null at the end). */
  more: (() => Uint8Array | null) | null;
  /** Sent after `rest` (and the chunks). */
  tail: Uint8Array;
  total: number;
  offset: number;
  progressAtMs: number;
  /** Called once the body's bytes are no longer needed (see `whenSent`). */
  done: (() => void) | null;
}

/** Responses whose bodies are still being sent: a graceful stop waits for them. */
export const streaming = new Map<HttpResponse, Pending>();

/** The body of `res` is sent, given up or aborted: nothing reads its bytes any more. */
function finish(res: HttpResponse): void {
  const p = streaming.get(res);
  if (!p) return;
  streaming.delete(res);
  p.done?.();
}

/**
 * For a response whose body is still being sent (`send` returned true):
 * `done` runs once its bytes are no longer needed, whether the body was sent
 * whole, given up or aborted by the client. uWebSockets.js keeps no reference
 * to them: `tryEnd` copies what it writes and leaves the rest to us.
 */
export function whenSent(res: HttpResponse, done: () => void): void {
  const p = streaming.get(res);
  if (p) p.done = done;
}

/**
 * How often bodies still being sent are pushed on. uWebSockets.js writes
 * again only on a writable event, which Linux raises once a large part of
 * the send buffer is free: to a client reading 100 KB/s that is tens of
 * seconds, longer than the 10 s after which uWebSockets.js drops a silent
 * connection. Each push writes what the socket takes now and restarts that
 * timeout.
 */
const PUSH_INTERVAL_MS = 1000;
/** A client that has taken no byte for this long is left to the timeout. */
const STALL_LIMIT_MS = 60_000;
let pusher: NodeJS.Timeout | null = null;

/**
 * Offers the socket the rest of a pending body from `offset`, then its next
 * chunks while it takes them whole, then its tail: [more may be written now,
 * finished]. `tryEnd` keeps nothing it could not write; what it did not take
 * is offered again from the new write offset.
 */
function sendRest(res: HttpResponse, p: Pending, offset: number): [boolean, boolean] {
  for (;;) {
    const at = offset - p.restBase;
    if (at >= p.rest.length && p.more) {
      const chunk = p.more();
      if (chunk) {
        p.rest = chunk;
        p.restBase = offset;
        continue;
      }
      p.more = null;
    }
    if (at >= p.rest.length) return res.tryEnd(p.tail.subarray(at - p.rest.length), p.total);
    const [ok, finished] = res.tryEnd(p.rest.subarray(at), p.total);
    if (!ok || finished) return [ok, finished];
    if (!p.more) return res.tryEnd(p.tail, p.total);
    offset = res.getWriteOffset();
  }
}

/** Tries to send more of a pending body; false once it is finished or given up. */
function push(res: HttpResponse, p: Pending, nowMs: number): boolean {
  if (res.aborted) return false;
  const offset = res.getWriteOffset();
  if (offset !== p.offset) {
    p.offset = offset;
    p.progressAtMs = nowMs;
  } else if (nowMs - p.progressAtMs > STALL_LIMIT_MS) {
    return false;
  }
  let finished = false;
  res.cork(() => {
    [, finished] = sendRest(res, p, offset);
  });
  return !finished;
}

function pushAll(): void {
  const now = performance.now();
  for (const [res, p] of streaming) if (!push(res, p, now)) finish(res);
  if (streaming.size === 0 && pusher) {
    clearInterval(pusher);
    pusher = null;
  }
}

const NO_TAIL = new Uint8Array(0);

/**
 * Writes status, headers and body (then `tail`) in one cork. A body the
 * socket cannot take at once is sent in pieces on `onWritable` and by the
 * periodic push, from the caller's bytes: true is returned then, and those
 * bytes must not change until the response is done (a reused buffer is
 * lent to it, and `whenSent` tells when it may be reused).
 */
export function send(res: HttpResponse, status: string, headers: Headers, body: Uint8Array, head: boolean, tail: Uint8Array | null = null): boolean {
  return start(res, status, headers, head, { rest: body, restBase: 0, more: null, tail: tail ?? NO_TAIL, total: body.length + (tail?.length ?? 0), offset: 0, progressAtMs: 0, done: null });
}

/**
 * The same for a body of `total` bytes written a chunk at a time: `next`
 * writes the next chunk and returns it (null after the last), and is called
 * again only once the socket has taken the whole chunk before. True when the
 * body is still being sent: `next` is then called later, from writable
 * events, and what it reads must stay valid until `whenSent`.
 */
export function sendChunks(res: HttpResponse, status: string, headers: Headers, total: number, next: () => Uint8Array | null, head: boolean): boolean {
  return start(res, status, headers, head, { rest: NO_TAIL, restBase: 0, more: next, tail: NO_TAIL, total, offset: 0, progressAtMs: 0, done: null });
}

function start(res: HttpResponse, status: string, headers: Headers, head: boolean, p: Pending): boolean {
  lastStatus = status;
  lastBytes = p.total;
  sentCount++;
  let pending = false;
  res.cork(() => {
    res.writeStatus(status);
    for (const [name, value] of headers) res.writeHeader(name, value);
    if (head) {
      res.writeHeader('Content-Length', String(p.total));
      res.endWithoutBody();
      return;
    }
    const base = res.getWriteOffset();
    p.restBase = p.offset = base;
    const [, done] = sendRest(res, p, base);
    if (done) return;
    pending = true;
    p.offset = res.getWriteOffset();
    p.progressAtMs = performance.now();
    watchAbort(res);
    streaming.set(res, p);
    pusher ??= setInterval(pushAll, PUSH_INTERVAL_MS).unref();
    res.onWritable((offset: number) => {
      if (res.aborted) return true;
      const [more, finished] = sendRest(res, p, offset);
      if (finished) finish(res);
      return more;
    });
  });
  return pending;
}

const encoder = new TextEncoder();

/** A one-line `Error: ...` answer (API.md 1.4). */
export function sendError(res: HttpResponse, status: string, message: string, head: boolean, extra: Headers = []): void {
  send(res, status, [['Content-Type', TEXT], ['Cache-Control', 'no-store'], ...extra], encoder.encode(`Error: ${message}`), head);
}
