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
    streaming.delete(res);
  });
}

/** Responses whose bodies are still being sent: a graceful stop waits for them. */
export const streaming = new Set<HttpResponse>();

/**
 * Writes status, headers and body in one cork. A body the socket cannot take
 * at once is sent in pieces on `onWritable`; the bytes not yet sent are copied
 * out when `borrowed` (the caller's buffer is reused by the next request).
 */
export function send(res: HttpResponse, status: string, headers: Headers, body: Uint8Array, head: boolean, borrowed: boolean): void {
  lastStatus = status;
  lastBytes = body.length;
  sentCount++;
  res.cork(() => {
    res.writeStatus(status);
    for (const [name, value] of headers) res.writeHeader(name, value);
    if (head) {
      res.writeHeader('Content-Length', String(body.length));
      res.endWithoutBody();
      return;
    }
    const total = body.length;
    const base = res.getWriteOffset();
    const [ok, done] = res.tryEnd(body, total);
    if (ok || done) return;
    const sent = res.getWriteOffset() - base;
    const rest = borrowed ? body.slice(sent) : body.subarray(sent);
    const restBase = base + sent;
    watchAbort(res);
    streaming.add(res);
    res.onWritable((offset: number) => {
      if (res.aborted) return true;
      const [more, finished] = res.tryEnd(rest.subarray(offset - restBase), total);
      if (finished) streaming.delete(res);
      return more;
    });
  });
}

const encoder = new TextEncoder();

/** A one-line `Error: ...` answer (API.md 1.4). */
export function sendError(res: HttpResponse, status: string, message: string, head: boolean, extra: Headers = []): void {
  send(res, status, [['Content-Type', TEXT], ['Cache-Control', 'no-store'], ...extra], encoder.encode(`Error: ${message}`), head, false);
}
