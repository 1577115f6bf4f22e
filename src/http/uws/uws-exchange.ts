import { Exchange, type RouteAccount } from '../exchange.js';
import type { Head } from '../head.js';
import type { HttpResponse } from './load.js';

/** On every HTTPS answer (docs/operations.md, HTTPS): browsers come back over HTTPS only, for a year. */
const HSTS_NAME = Buffer.from('Strict-Transport-Security');
const HSTS_VALUE = Buffer.from('max-age=31536000');

/** What the exchanges of one app share: whether the service drains (docs/operations.md, Draining). */
export interface UwsState {
  draining: boolean;
}

/**
 * An exchange on uWebSockets.js: its response object's own calls. The
 * status and headers go in one `writeStatus` (head.ts); the build appends
 * Date, its mark and Content-Length.
 */
export class UwsExchange extends Exchange {
  /** `Connection: close` is in the head: the service drains, and the client is told to go. */
  private closeSaid = false;

  constructor(readonly res: HttpResponse, head: boolean, secure: boolean, account: RouteAccount, private readonly state: UwsState) {
    super(head, secure, account);
  }

  protected watchAbort(aborted: () => void): void {
    this.res.onAborted(aborted);
  }

  cork(write: () => void): void {
    this.res.cork(write);
  }

  writeHead(h: Head): void {
    this.res.writeStatus(h.bytes);
    if (this.secure) this.res.writeHeader(HSTS_NAME, HSTS_VALUE);
    if (this.state.draining) {
      // uWebSockets.js has no way to close after a body written with tryEnd: the client closes, as told.
      this.res.writeHeader('Connection', 'close');
      this.closeSaid = true;
    }
  }

  tryEnd(chunk: Uint8Array, total: number): [boolean, boolean] {
    return this.res.tryEnd(chunk, total);
  }

  writeOffset(): number {
    return this.res.getWriteOffset();
  }

  onWritable(more: () => boolean): void {
    this.res.onWritable(more);
  }

  endHead(total: number): void {
    this.res.writeHeader('Content-Length', String(total));
    this.res.endWithoutBody();
  }

  endEmpty(): void {
    this.res.endWithoutBody();
  }

  endAndClose(body: Uint8Array): void {
    // uWebSockets.js writes its own Connection: close, unless the head says so already.
    this.res.end(body, !this.closeSaid);
  }

  close(): void {
    this.res.close();
  }

  peer(): string {
    return Buffer.from(this.res.getRemoteAddressAsText()).toString('latin1');
  }

  holdsNothing(): boolean {
    // tryEnd keeps nothing it could not write.
    return true;
  }
}
