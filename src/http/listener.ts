import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { CodedError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { App, ListenSocket } from './engine.js';

/**
 * How often the descriptors in use are counted against the limit: often
 * when more than an eighth are in use, seldom otherwise (counting reads one
 * entry per descriptor). Between a burst that takes the last descriptors
 * and the next count, accepting spins: the first count comes at most 250 ms
 * after a burst, unless the burst took over seven eighths of the limit in
 * less than a second.
 */
const CHECK_MS = 250;
const RELAXED_CHECK_MS = 1000;

/** The limit last read, for a count that finds no descriptor left to read with. */
let lastLimit: number | null = null;

/**
 * Open file descriptors of this process and its limit; null where /proc
 * does not tell. Reading takes a descriptor: when none is left (another
 * thread's accept took the one given up for the count), every one is in use.
 */
function countDescriptors(): { open: number; limit: number } | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m || m[1] === 'unlimited') return null;
    lastLimit = Number(m[1]);
    // Less the directory's own descriptor, listed while it is read.
    return { open: readdirSync('/proc/self/fd').length - 1, limit: lastLimit };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return (code === 'EMFILE' || code === 'ENFILE') && lastLimit !== null ? { open: lastLimit, limit: lastLimit } : null;
  }
}

/**
 * The listening socket, and the file descriptors that accepting needs
 * (docs/operations.md, Memory, hostile clients and secrets). Once no descriptor is left, the accept of
 * uWebSockets.js fails and is woken again at once: the process would spin
 * and say nothing (Node's resets each new connection instead). So the descriptors in use are counted, and close to the
 * limit the socket stops listening (new connections are refused) until
 * enough are free again, with one log line each way, as nginx does. Every
 * timeout goes on while paused (the node engine keeps its head timeout
 * itself meanwhile), so that an attacker's connections close and the
 * service answers again within seconds. A margin stays for the service's
 * own files (a snapshot to load).
 */
export class Listener {
  /** Times accepting was paused for want of descriptors. */
  pauses = 0;
  private token: ListenSocket | null = null;
  /** Accepting is paused for want of descriptors. */
  private pausedNow = false;
  private resuming = false;
  private draining = false;
  private checker: NodeJS.Timeout | null = null;
  private closed = false;
  private port = 0;
  /**
   * A descriptor held for counting, which needs one itself: given up for
   * the count and taken again (nothing else runs in between, so no
   * connection can take it meanwhile).
   */
  private spare: number | null = null;
  /** Apps replaced by a renewal, still serving the connections they accepted, closed with the rest at the end. */
  private readonly retired: App[] = [];
  /** Told when accepting pauses or resumes: the other serving threads follow this one's count (docs/threads.md). */
  onPause: (paused: boolean) => void = () => undefined;

  /**
   * `renewable`: another app may take the port over (a renewed
   * certificate, docs/operations.md, HTTPS), or listens beside this one
   * (serving threads). The port is then bound with SO_REUSEPORT,
   * after a first exclusive bind that proves no other process has it.
   */
  constructor(private app: App, private readonly host: string, private readonly log: Logger, private readonly renewable = false) {}

  get paused(): boolean {
    return this.pausedNow && !this.closed;
  }

  /** Listens on `port` (0: any free one); resolves with the port. */
  async start(port: number): Promise<number> {
    this.token = await this.listen(port, true);
    this.port = this.token.port;
    if (this.renewable) {
      this.token.close();
      this.token = await this.listen(this.port);
    }
    if (this.descriptors() !== null) {
      this.schedule(CHECK_MS);
    }
    return this.port;
  }

  /**
   * Listens on `port` beside the apps that already do (other serving
   * threads of this process, docs/threads.md). The descriptors are the
   * process's: the main thread counts them, and says when to pause.
   */
  async join(port: number): Promise<void> {
    this.port = port;
    this.token = await this.listen(port, false);
  }

  /** Stops or starts accepting as the thread that counts the descriptors says. */
  async follow(paused: boolean): Promise<void> {
    if (this.closed) return;
    if (paused) this.pause();
    else await this.resume();
  }

  /** Stops accepting: the listening socket closes (the engine's timeouts go on). */
  private pause(): void {
    if (this.pausedNow) return;
    this.pausedNow = true;
    this.token?.close();
    this.token = null;
  }

  /** Accepts again; throws when the port cannot be had again (tried at the next check). */
  private async resume(): Promise<void> {
    if (!this.pausedNow || this.resuming) return;
    this.resuming = true;
    try {
      const token = await this.listen(this.port);
      if (this.closed) return token.close();
      this.token = token;
      this.pausedNow = false;
    } finally {
      this.resuming = false;
    }
  }

  /**
   * New connections go to `app` from now on; those open on the app before
   * go on there. The new app listens beside the old, which stops listening
   * right after the event loop's next pass over what is ready, so that what
   * it has accepted by then is served. A connection the kernel queued on it
   * in between is reset, unless net.ipv4.tcp_migrate_req moves it to the
   * new one (docs/operations.md, HTTPS).
   */
  async replace(app: App): Promise<void> {
    if (this.closed) throw new Error('the listener is closed');
    // Paused for want of descriptors, with the socket closed: the next listen is the new app's.
    const token = this.token ? await this.listen(this.port, false, app) : null;
    this.retired.push(this.app);
    this.app = app;
    if (this.draining) app.drain();
    if (!token) return;
    const previous = this.token;
    this.token = token;
    if (previous) setImmediate(() => previous.close());
  }

  /** Every answer of every app closes its connection from now on (the start of a drain). */
  drainApps(): void {
    this.draining = true;
    for (const app of [...this.retired, this.app]) app.drain();
  }

  /** Closes the connections of every app quiet for `quietMs`: how many are left open, or null where an engine cannot tell. */
  closeQuiet(quietMs: number): number | null {
    let open: number | null = 0;
    for (const app of [...this.retired, this.app]) {
      const left = app.closeQuiet(quietMs);
      open = left === null || open === null ? null : open + left;
    }
    return open;
  }

  /** Closes every connection of every app this listener served (the end of a drain). */
  closeApps(): void {
    for (const app of [...this.retired, this.app]) app.close();
    this.retired.length = 0;
  }

  /** Stops accepting for good; connections open stay. */
  close(): void {
    this.closed = true;
    if (this.checker) clearTimeout(this.checker);
    this.checker = null;
    this.token?.close();
    this.token = null;
    if (this.spare !== null) closeSync(this.spare);
    this.spare = null;
  }

  private schedule(ms: number): void {
    this.checker = setTimeout(() => this.check(), ms);
    this.checker.unref();
  }

  private check(): void {
    if (this.closed) return;
    const d = this.descriptors();
    if (!d) return this.schedule(RELAXED_CHECK_MS);
    this.schedule(d.open * 8 > d.limit || this.pausedNow ? CHECK_MS : RELAXED_CHECK_MS);
    const margin = Math.max(16, Math.floor(d.limit / 50));
    // Accepting resumes a few descriptors below the pause, not at half the margin again: what the process holds at rest (more with each serving thread) may be close to that.
    const resumeBelow = d.limit - margin - Math.max(4, margin >> 1);
    if (!this.pausedNow && d.open >= d.limit - margin) {
      this.pause();
      this.pauses++;
      this.onPause(true);
      this.log.error({ event: 'accept_paused', open_files: d.open, limit: d.limit }, `${d.open} of ${d.limit} file descriptors in use: new connections are refused until some close (raise LimitNOFILE)`);
    } else if (this.pausedNow && d.open < resumeBelow) {
      this.resume().then(
        () => {
          if (this.closed || this.pausedNow) return;
          this.onPause(false);
          this.log.info({ event: 'accept_resumed', open_files: d.open, limit: d.limit }, 'file descriptors are free again: accepting connections');
        },
        () => undefined, // tried again at the next check
      );
    }
  }

  private descriptors(): { open: number; limit: number } | null {
    if (this.spare !== null) closeSync(this.spare);
    const d = countDescriptors();
    try {
      this.spare = openSync('/dev/null', 'r');
    } catch {
      this.spare = null;
    }
    return d;
  }

  /** Exclusive unless the port is renewable (or shared with other threads). */
  private async listen(port: number, exclusive = !this.renewable, app = this.app): Promise<ListenSocket> {
    const token = await app.listen(this.host, port, exclusive);
    if (!token) throw new CodedError('E_LISTEN', `cannot listen on ${this.host}:${port}: the port is in use or the address is not available`);
    return token;
  }
}
