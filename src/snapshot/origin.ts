import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Logger } from '../core/log.js';
import { messageOf } from '../core/errors.js';

/** A download that takes longer than this is given up (and tried again at the next poll). */
const DOWNLOAD_TIMEOUT_MS = 120_000;

/**
 * One snapshot for every instance (README, Several instances): an http(s) origin polled
 * with a conditional GET every `pollS` seconds. A changed file is streamed
 * to a temporary file beside `localPath` and renamed over it, so it loads
 * exactly as a local file does (watched, built in a worker, swapped). A
 * download that fails, is cut short, or answers anything but 200 or 304,
 * leaves the file, and so the snapshot served, as they were.
 */
export class SnapshotOrigin {
  lastError: string | null = null;
  /** Polls answered 304, and files downloaded. */
  notModified = 0;
  downloads = 0;
  private etag: string | null = null;
  private lastModified: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(readonly url: string, private readonly localPath: string, private readonly pollS: number, private readonly log: Logger) {}

  /** Polls now, then every `pollS` seconds; the event loop never waits on it. */
  start(): void {
    const tick = (): void => {
      if (this.closed) return;
      this.running = this.poll().finally(() => {
        this.running = null;
        if (!this.closed) this.timer = setTimeout(tick, this.pollS * 1000);
      });
    };
    tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private async poll(): Promise<void> {
    const temp = `${this.localPath}.download`;
    try {
      const headers: Record<string, string> = {};
      if (this.etag) headers['if-none-match'] = this.etag;
      if (this.lastModified) headers['if-modified-since'] = this.lastModified;
      const res = await fetch(this.url, { headers, signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
      if (res.status === 304) {
        await res.body?.cancel();
        this.notModified++;
        return;
      }
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel();
        throw new Error(`the origin answered ${res.status}`);
      }
      await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(temp));
      const expected = res.headers.get('content-length');
      const got = (await stat(temp)).size;
      if (expected !== null && Number(expected) !== got) throw new Error(`the download was cut short: ${got} of ${expected} bytes`);
      await rename(temp, this.localPath);
      this.etag = res.headers.get('etag');
      this.lastModified = res.headers.get('last-modified');
      this.downloads++;
      if (this.lastError !== null) this.log.info({ event: 'origin_ok', url: this.url }, 'snapshot origin answers again');
      this.lastError = null;
      this.log.info({ event: 'origin_downloaded', url: this.url, bytes: got }, 'snapshot downloaded from the origin');
    } catch (err) {
      await rm(temp, { force: true });
      const cause = (err as { cause?: unknown }).cause;
      const reason = `snapshot origin ${this.url}: ${messageOf(err)}${cause ? ` (${messageOf(cause)})` : ''}`;
      if (reason !== this.lastError) this.log.warn({ event: 'origin_failed', url: this.url, reason }, 'snapshot download failed; still serving the current snapshot');
      this.lastError = reason;
    }
  }
}
