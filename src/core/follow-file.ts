import { statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

export interface FollowOptions {
  /** Quiet time after the last event before loading: bursts load once. */
  debounceMs?: number;
  /** The periodic stat that catches what events miss. */
  pollMs?: number;
}

/** What identifies one version of a file: a rename changes the inode, a rewrite the size or times. */
function signature(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // Missing is one thing; a folder that cannot be searched, a loop of links, ... another, said as such.
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
    return `${UNREADABLE}${e.code ?? 'error'}: ${e.message.replace(/^[A-Z]+: /, '').split(',')[0]}`;
  }
}

/** Marks a signature that is the reason a file cannot be looked at. */
const UNREADABLE = '!';

/**
 * Follows one file that other processes replace (rename over it) or rewrite in
 * place, and calls `load` for each new version, never two at once.
 *
 * chokidar throttles `change` per path with no trailing event, so two renames
 * 10 ms apart can yield one event. Hence: the folder is watched and filtered by
 * name, events are debounced with a trailing timer, the file is stat'ed again
 * after every load and reloaded if it changed meanwhile, and a slow periodic
 * stat is the backstop.
 */
export class FileFollower {
  readonly path: string;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private poller: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  /** Signature of the version last handed to `load` (null: the file was missing). */
  private attempted: string | null | undefined = undefined;
  private readonly debounceMs: number;
  private readonly pollMs: number;

  constructor(
    path: string,
    private readonly load: (path: string, unchanged: () => boolean) => Promise<void>,
    /** The file is missing (null), or cannot be looked at (the reason). */
    private readonly onMissing: (unreadable: string | null) => void,
    options: FollowOptions = {},
  ) {
    this.path = resolve(path);
    this.debounceMs = options.debounceMs ?? 50;
    this.pollMs = options.pollMs ?? 1000;
  }

  /** Loads the current version (if any), then follows changes. */
  async start(): Promise<void> {
    const name = basename(this.path);
    this.watcher = watch(dirname(this.path), {
      depth: 0,
      ignoreInitial: true,
      ignored: (p: string) => p !== dirname(this.path) && basename(p) !== name,
    });
    this.watcher.on('all', (_event, p) => {
      if (resolve(p) === this.path) this.schedule();
    });
    this.watcher.on('error', () => this.schedule());
    this.poller = setInterval(() => {
      if (signature(this.path) !== this.attempted) this.schedule();
    }, this.pollMs);
    this.poller.unref();
    await this.check();
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.check();
    }, this.debounceMs);
  }

  /** Loads if the file changed since the last attempt; resolves when settled. */
  check(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop();
    return this.running;
  }

  private async loop(): Promise<void> {
    // Yield first, so `running` is set before the loop can end and clear it.
    await null;
    do {
      this.again = false;
      const before = signature(this.path);
      if (before === this.attempted) continue;
      this.attempted = before;
      if (before === null || before.startsWith(UNREADABLE)) {
        this.onMissing(before === null ? null : before.slice(UNREADABLE.length));
        continue;
      }
      // `load` reports its own failures; one must not stop the following.
      await this.load(this.path, () => signature(this.path) === before).catch(() => undefined);
      // Replaced or rewritten while it was being read: read it again.
      if (signature(this.path) !== before) this.again = true;
    } while (this.again);
    this.running = null;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    if (this.poller) clearInterval(this.poller);
    this.timer = this.poller = null;
    await this.watcher?.close();
    await this.running;
  }
}

/**
 * A file the service follows and loads anew at every version: subclasses say
 * how to load one and what a missing file means.
 */
export abstract class FollowedFile {
  private readonly follower: FileFollower;

  constructor(path: string, options?: FollowOptions) {
    this.follower = new FileFollower(path, async (p, unchanged) => this.load(p, unchanged), (why) => this.missing(why), options);
  }

  get path(): string {
    return this.follower.path;
  }

  /**
   * Loads one version. `unchanged()` tells whether the file is still the
   * version the load began on; when it is not, the file is read again anyway.
   */
  protected abstract load(path: string, unchanged: () => boolean): Promise<void> | void;
  /** The file is missing (null), or cannot be looked at (the reason: a folder without permission, ...). */
  protected abstract missing(unreadable: string | null): void;

  /** Loads the current version (if any), then follows changes. */
  start(): Promise<void> {
    return this.follower.start();
  }

  /** Resolves once the file as it is now has been considered. */
  settle(): Promise<void> {
    return this.follower.check();
  }

  close(): Promise<void> {
    return this.follower.close();
  }
}
