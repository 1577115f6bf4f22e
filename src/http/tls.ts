import { readCertificatePair, pairDigest, type CertificatePair } from '../core/certificate.js';
import type { Clock } from '../core/clock.js';
import { messageOf } from '../core/errors.js';
import { FileFollower, type FollowOptions } from '../core/follow-file.js';
import type { Logger } from '../core/log.js';

/**
 * Quiet time after a change to either file before the pair is read: an ACME
 * client writes the certificate and the key one after the other, and the
 * pair in between does not match.
 */
const SETTLE_MS = 1000;

/**
 * The certificate in force and its renewal (docs/operations.md, HTTPS): both files are
 * followed the way the snapshot is, and a new pair is taken only when both
 * parse and match. A broken pair keeps the one in force, logged once per
 * reason and shown in /health.
 */
export class TlsCertificates {
  loadedAtMs: number;
  lastError: string | null = null;
  renewals = 0;
  failures = 0;
  private readonly followers: FileFollower[];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  /**
   * `renew` puts a checked pair in force (it throws if it cannot); `current`
   * is the pair checked at start.
   */
  constructor(
    public current: CertificatePair,
    private readonly renew: (pair: CertificatePair) => Promise<void>,
    private readonly clock: Clock,
    private readonly log: Logger,
    follow: FollowOptions = {},
  ) {
    this.loadedAtMs = clock.nowMs();
    const changed = async (): Promise<void> => this.changed();
    this.followers = [current.certFile, current.keyFile].map((file) => new FileFollower(file, changed, () => this.changed(), follow));
  }

  async start(): Promise<void> {
    await Promise.all(this.followers.map((f) => f.start()));
  }

  /** Seconds until the certificate in force expires (negative once it has). */
  secondsLeft(): number {
    return (this.current.notAfterMs - this.clock.nowMs()) / 1000;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.all(this.followers.map((f) => f.close()));
  }

  private changed(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.check();
    }, SETTLE_MS);
  }

  private async check(): Promise<void> {
    const { certFile, keyFile } = this.current;
    if (pairDigest(certFile, keyFile) === this.current.digest) {
      // Back to the pair in force after a broken one.
      this.lastError = null;
      return;
    }
    let pair: CertificatePair;
    try {
      pair = readCertificatePair(certFile, keyFile);
      await this.renew(pair);
    } catch (err) {
      this.failures++;
      const reason = messageOf(err);
      if (reason !== this.lastError) this.log.error({ event: 'tls_renewal_failed', reason }, `${reason}: the certificate in force stays`);
      this.lastError = reason;
      return;
    }
    this.current = pair;
    this.loadedAtMs = this.clock.nowMs();
    this.lastError = null;
    this.renewals++;
    this.log.info({ event: 'tls_renewed', subject: pair.subject, not_after: new Date(pair.notAfterMs).toISOString() }, `new connections get the renewed certificate of ${pair.subject}, valid until ${new Date(pair.notAfterMs).toISOString()}`);
    // Rewritten again while it was put in force: the newest pair is read too.
    if (pairDigest(certFile, keyFile) !== pair.digest) this.changed();
  }
}
