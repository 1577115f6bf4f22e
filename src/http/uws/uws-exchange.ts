import type { Address } from '../../access/address.js';
import { RATE_NAME, RATE_POLICY_NAME } from '../../access/rate-limit-headers.js';
import { mappedIPv4 } from '../../core/ipv6.js';
import { Exchange, type RouteAccount } from '../exchange.js';
import type { Head } from '../head.js';
import type { HttpResponse } from './load.js';

/** On every HTTPS answer (docs/operations.md, HTTPS): browsers come back over HTTPS only, for a year. */
const HSTS_NAME = Buffer.from('Strict-Transport-Security');
const HSTS_VALUE = Buffer.from('max-age=31536000');
const RATE_POLICY = Buffer.from(RATE_POLICY_NAME);
const RATE = Buffer.from(RATE_NAME);

/**
 * The most one `tryEnd` gives uWebSockets.js over TLS: one record. OpenSSL
 * sends a larger write record by record, and when the socket fills midway it
 * reports nothing written while the records before went out; uWebSockets.js
 * then counts nothing either, and the next write from that offset must be at
 * least as long as what went out, or OpenSSL fails the connection for good
 * (v20.30 also moves part of it into its cork buffer first, so the retry is
 * shorter). The connection then hung with the body half sent. One record
 * is sent whole or kept whole, and the retry from the same offset is never
 * shorter than it.
 */
const TLS_RECORD = 16 * 1024;

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
  readonly writableOnFlush = false;
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
    const rate = this.rate;
    if (rate !== null) {
      this.res.writeHeader(RATE_POLICY, rate.policy);
      this.res.writeHeader(RATE, rate.value);
    }
  }

  tryEnd(chunk: Uint8Array, total: number): [boolean, boolean] {
    if (!this.secure || chunk.length <= TLS_RECORD) return this.res.tryEnd(chunk, total);
    for (let at = 0; ; at += TLS_RECORD) {
      const result = this.res.tryEnd(chunk.subarray(at, at + TLS_RECORD), total);
      if (!result[0] || result[1] || at + TLS_RECORD >= chunk.length) return result;
    }
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

  /** Read in binary, not as text: every request of a key with a subnet limit reads it. */
  override peerAddress(): Address | null {
    const b = new Uint8Array(this.res.getRemoteAddress());
    if (b.length === 4) return { v4: ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0 };
    if (b.length !== 16) return null;
    const groups: number[] = [];
    for (let i = 0; i < 16; i += 2) groups.push((b[i] << 8) | b[i + 1]);
    const mapped = mappedIPv4(groups);
    return mapped >= 0 ? { v4: mapped } : { v6: groups };
  }

  holdsNothing(): boolean {
    // tryEnd keeps nothing it could not write.
    return true;
  }
}
