import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Logger } from './log.js';
import { messageOf } from './errors.js';
import { maskUrl, splitCredentials } from './secret-url.js';

/** A download that takes longer than this is given up (and tried again at the next poll). */
const DOWNLOAD_TIMEOUT_MS = 120_000;
export const DEFAULT_SNAPSHOT_MAX_MB = 1024;
const MB = 1024 * 1024;

/** What an origin serves: its name in logs and errors, and what bounds its size. */
export interface OriginKind {
  /** `snapshot` or `keys`. */
  name: string;
  /** How the size bound is named in the error of a file over it. */
  maxBytesSaid: string;
}

/**
 * One file for every instance (docs/several-instances.md), the snapshot or
 * the keys: an http(s) origin polled with a conditional GET every `pollS`
 * seconds. A changed file is streamed to a temporary file beside
 * `localPath` and renamed over it, so it loads exactly as a local file does
 * (watched, checked, swapped in whole). A download that fails, is cut
 * short, or answers anything but 200 or 304, leaves the file, and so what
 * is in force, as they were; so does a file larger than `maxBytes`, cut
 * off as soon as it is known to be.
 *
 * Credentials in the URL are sent as an Authorization header, and the URL is
 * shown (logs, /health, errors) with them and its query values masked.
 */
export class Origin {
  lastError: string | null = null;
  /** The URL as it may be shown. */
  readonly url: string;
  /** Polls answered 304, and files downloaded. */
  notModified = 0;
  downloads = 0;
  private etag: string | null = null;
  private lastModified: string | null = null;
  /** The SHA-256 of the file in place: an origin that validates nothing sends it whole each time, and the same bytes are not loaded again. */
  private digest: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  private readonly target: { url: string; authorization: string | null };

  constructor(url: string, private readonly localPath: string, private readonly pollS: number, private readonly maxBytes: number, private readonly kind: OriginKind, private readonly log: Logger) {
    this.url = maskUrl(url);
    this.target = splitCredentials(url);
  }

  /** One poll now: at start, before what depends on the file is read. */
  pollNow(): Promise<void> {
    return this.poll();
  }

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
      if (this.target.authorization) headers.authorization = this.target.authorization;
      if (this.etag) headers['if-none-match'] = this.etag;
      if (this.lastModified) headers['if-modified-since'] = this.lastModified;
      const res = await fetch(this.target.url, { headers, signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
      if (res.status === 304) {
        await res.body?.cancel();
        this.notModified++;
        return;
      }
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel();
        throw new Error(`the origin answered ${res.status}`);
      }
      const expected = res.headers.get('content-length');
      if (expected !== null && Number(expected) > this.maxBytes) {
        await res.body.cancel();
        throw new Error(this.tooLarge(`${Number(expected)} bytes announced`));
      }
      let received = 0;
      const hash = createHash('sha256');
      const cap = new Transform({
        transform: (chunk: Buffer, _encoding, done) => {
          received += chunk.length;
          hash.update(chunk);
          done(received > this.maxBytes ? new Error(this.tooLarge(`cut off after ${received} bytes`)) : null, chunk);
        },
      });
      // Readable by this user alone: a keys file may hold keys in plain text.
      await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), cap, createWriteStream(temp, { mode: 0o600 }));
      const got = (await stat(temp)).size;
      if (expected !== null && Number(expected) !== got) throw new Error(`the download was cut short: ${got} of ${expected} bytes`);
      this.etag = res.headers.get('etag');
      this.lastModified = res.headers.get('last-modified');
      const what = this.kind.name;
      if (this.lastError !== null) this.log.info({ event: 'origin_ok', what, url: this.url }, `${what} origin answers again`);
      this.lastError = null;
      const digest = hash.digest('hex');
      if (digest === this.digest) {
        await rm(temp, { force: true });
        this.notModified++;
        return;
      }
      await rename(temp, this.localPath);
      this.digest = digest;
      this.downloads++;
      this.log.info({ event: 'origin_downloaded', what, url: this.url, bytes: got }, `${what} downloaded from the origin`);
    } catch (err) {
      await rm(temp, { force: true });
      const cause = (err as { cause?: unknown }).cause;
      const what = this.kind.name;
      const reason = maskSecrets(`${what} origin ${this.url}: ${messageOf(err)}${cause ? ` (${messageOf(cause)})` : ''}`, this.target.url);
      if (reason !== this.lastError) this.log.warn({ event: 'origin_failed', what, url: this.url, reason }, `${what} download failed; the ${what} in force stay${what === 'keys' ? '' : 's'}`);
      this.lastError = reason;
    }
  }

  private tooLarge(what: string): string {
    return `the ${this.kind.name} file is larger than ${this.kind.maxBytesSaid} ${Math.round(this.maxBytes / MB)} (${what})`;
  }
}

/** An error's text without the fetched URL's query values, should it quote the URL. */
function maskSecrets(text: string, url: string): string {
  return text.split(url).join(maskUrl(url));
}
