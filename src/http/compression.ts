import { compressor, type Encoding } from './encoding.js';
import type { Source } from './production.js';
import { BytesBody, type Body } from './sender.js';


/**
 * One encoded body, compressed once on libuv's thread pool and shared by
 * every request that needs it meanwhile. The plain body is read a piece at a
 * time, the next piece only once zlib has consumed the one before, so a
 * large body is never held whole in plain form for compression's sake. The
 * encoded length is announced, so readers wait for the whole of it.
 */
export class Compression implements Source {
  total = -1;
  private bytes: Uint8Array | null = null;
  private waiting: Array<(ok: boolean) => void> = [];
  private failed = false;

  constructor(
    readonly key: string,
    readonly encoding: Encoding,
    plain: Source,
    /** Runs once it is over, with its bytes (null if it failed). */
    private readonly done: (c: Compression, bytes: Uint8Array | null, err?: unknown) => void,
  ) {
    plain.whenReady((ok) => {
      if (ok) this.run(plain.open());
      else this.finish(null, new Error('the plain body could not be produced'));
    });
  }

  private run(body: Body): void {
    const z = compressor(this.encoding);
    const parts: Buffer[] = [];
    z.on('data', (d: Buffer) => parts.push(d));
    z.on('error', (err) => {
      body.release();
      this.finish(null, err);
    });
    z.on('end', () => this.finish(Buffer.concat(parts)));
    let i = 0;
    const feed = (err?: Error | null): void => {
      if (err) return; // reported by 'error'
      let piece: Uint8Array | null;
      try {
        piece = body.piece(i++);
      } catch (e) {
        body.release();
        z.destroy();
        this.finish(null, e);
        return;
      }
      if (piece === null) {
        body.release();
        z.end();
      } else {
        z.write(piece, feed);
      }
    };
    feed();
  }

  private finish(bytes: Uint8Array | null, err?: unknown): void {
    if (this.total >= 0 || this.failed) return;
    if (bytes) {
      this.bytes = bytes;
      this.total = bytes.length;
    } else {
      this.failed = true;
    }
    this.done(this, bytes, err);
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w(bytes !== null);
  }

  whenReady(ready: (ok: boolean) => void): void {
    if (this.total >= 0) ready(true);
    else if (this.failed) ready(false);
    else this.waiting.push(ready);
  }

  open(): Body {
    return new BytesBody(this.bytes!);
  }
}
