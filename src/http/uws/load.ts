import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CodedError } from '../../core/errors.js';
import type { NativeBuild } from '../engine.js';
import type * as UWS from 'uws-v20.57';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uws-v20.57';

/**
 * The builds of uWebSockets.js the service can run on (docs/operations.md, Where it runs), the first that loads wins:
 * - `uWebSockets.js`: an official build, if a deployment installed one under
 *   that name;
 * - v20.57.0: Node 20, 22, 24 and 25, on glibc 2.38 or later;
 * - v20.30.0: Node 16, 18 and 20, on older C libraries (Debian 12's 2.36).
 */
const BUILDS = [
  { name: 'uWebSockets.js', label: 'uWebSockets.js as installed', refusesBadHeads: true, timesOut: true },
  { name: 'uws-v20.57', label: 'uWebSockets.js v20.57.0', refusesBadHeads: true, timesOut: false },
  { name: 'uws-v20.30', label: 'uWebSockets.js v20.30.0', refusesBadHeads: false, timesOut: true },
] as const;

/**
 * The largest request head v20.57 takes before it answers 431 itself (it
 * reads this when it loads; its default is 4 KiB): request targets up to
 * the 8 KiB that answer 414 (docs/api.md, Errors), and more, must reach the
 * service, which answers them.
 */
const MAX_HEADERS_BYTES = '65536';

export interface UwsBuild {
  /** The build loaded. */
  label: string;
  /** Its package as installed (its own name, not the alias it is installed under) and version, and the SHA-256 of the `.node` file loaded. */
  native: NativeBuild;
  /**
   * It answers 400 itself to a request without Host or with two, and 431 to
   * a head over its limit (docs/operations.md, What each build answers);
   * v20.30 passes two Host lines on to the handler.
   */
  refusesBadHeads: boolean;
  /**
   * It closes a connection idle for 10 s: silent, a head that never ends,
   * an idle keep-alive. v20.57 closes none, measured on Node 24
   * (docs/operations.md, What each build answers).
   */
  timesOut: boolean;
  /** The builds passed over, and why. */
  passedOver: string[];
}

let loaded: { uws: typeof UWS; build: UwsBuild } | null = null;
/** The builds tried when none loaded. */
let failedBuilds: string[] = [];
/** The SHA-256 digests a build's `.node` file must have (--uws-sha256); empty: any. */
let pinned: readonly string[] = [];
/** The builds passed over for their file's digest, and why, as the last choice found them. */
let refusedBuilds: string[] = [];

/**
 * Only a `.node` file with one of these SHA-256 digests is loaded (hex, any
 * case); empty: any. A build whose file has another is passed over, never
 * loaded, and the node engine serves where none is left.
 */
export function pinUws(digests: readonly string[]): void {
  const next = digests.map((d) => d.toLowerCase());
  if (next.join(',') === pinned.join(',')) return;
  pinned = next;
  loaded = null;
  failedBuilds = [];
}

/** The SHA-256 of each file read, by path: a file is hashed once per process. */
const digests = new Map<string, string>();
function sha256Of(file: string): string {
  let d = digests.get(file);
  if (d === undefined) digests.set(file, (d = createHash('sha256').update(readFileSync(file)).digest('hex')));
  return d;
}

/** Why a build did not load: no binary for this Node, a C library too old, or the error itself. */
function reasonOf(err: unknown): string {
  const text = String((err as Error)?.message ?? err);
  if (/Cannot find module/.test(text)) return 'not installed, or no binary for this Node.js';
  const glibc = /version `(GLIBC[_A-Z]*[0-9.]+)' not found/.exec(text);
  if (glibc) return `needs ${glibc[1]}, newer than this system's C library`;
  return text.split('\n').find((l) => l.trim() !== '')?.slice(0, 200) ?? 'failed to load';
}

/**
 * The package folder of a build and the `.node` file it loads on this
 * platform and Node's ABI, or why it has none: the package is missing, or
 * has no binary here. Loading such a build prints a warning of its own
 * (v20.30) before its fallback.
 */
function binaryOf(require: NodeJS.Require, name: string): { dir: string; file: string } | string {
  let dir: string;
  try {
    // The package's root: its main file's folder, or one above it that holds its package.json (its exports may hide that file from resolve).
    dir = dirname(require.resolve(name));
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  } catch {
    return 'not installed';
  }
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  for (const at of [join(dir, file), join(dir, 'binaries', file)]) if (existsSync(at)) return { dir, file: at };
  return `no binary for Node ${process.versions.node} (ABI ${process.versions.modules}) on ${process.platform}-${process.arch}`;
}

/** A build's own package name and version, as its package.json says. */
function packageOf(dir: string): { name: string; version: string } {
  try {
    const p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
    return { name: String(p.name ?? 'unknown'), version: String(p.version ?? 'unknown') };
  } catch {
    return { name: 'unknown', version: 'unknown' };
  }
}

/**
 * uWebSockets.js, from the first build that loads natively. A build that
 * falls back to its slow node:http shim (v20.30 does on a Node it has no
 * binary for, or with UWS_USE_FALLBACK set) is passed over: in that shim
 * tryEnd, onWritable and getRemoteAddressAsText throw. The shim lacks
 * SSLApp and getParts, which the native addons have.
 */
export function loadUws(): typeof UWS {
  if (loaded) return loaded.uws;
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= MAX_HEADERS_BYTES;
  const require = createRequire(import.meta.url);
  const passedOver: string[] = [];
  refusedBuilds = [];
  for (const build of BUILDS) {
    const binary = binaryOf(require, build.name);
    if (typeof binary === 'string') {
      if (binary !== 'not installed' || build.name !== 'uWebSockets.js') passedOver.push(`${build.label}: ${binary}`);
      continue;
    }
    const sha256 = sha256Of(binary.file);
    if (pinned.length > 0 && !pinned.includes(sha256)) {
      const why = `${build.label}: its file's SHA-256 ${sha256} is not one of --uws-sha256`;
      passedOver.push(why);
      refusedBuilds.push(why);
      continue;
    }
    const pkg = packageOf(binary.dir);
    let uws: typeof UWS;
    try {
      uws = require(build.name) as typeof UWS;
    } catch (err) {
      if (build.name !== 'uWebSockets.js') passedOver.push(`${build.label}: ${reasonOf(err)}`);
      continue;
    }
    if (typeof uws.getParts !== 'function' || typeof uws.SSLApp !== 'function') {
      passedOver.push(`${build.label}: no native binary for Node ${process.versions.node} (ABI ${process.versions.modules}), or UWS_USE_FALLBACK is set`);
      continue;
    }
    const native = { package: pkg.name, version: pkg.version, sha256 };
    loaded = { uws, build: { label: build.label, native, refusesBadHeads: build.refusesBadHeads, timesOut: build.timesOut, passedOver } };
    return uws;
  }
  failedBuilds = passedOver;
  throw new CodedError(
    'E_UWS_FALLBACK',
    `no build of uWebSockets.js loads natively on Node ${process.versions.node} (ABI ${process.versions.modules}), and its slow fallback is refused: ${passedOver.join('; ')}. Use --engine node or auto (docs/operations.md, Where it runs).`,
  );
}

/** The build loaded, and those passed over: for the start-up log. */
export function uwsBuild(): UwsBuild {
  loadUws();
  return loaded!.build;
}

/** The builds passed over, unloaded, because their file's digest is not one of those pinned. */
export function uwsRefused(): readonly string[] {
  uwsUnavailable();
  return refusedBuilds;
}

/** Why no build loads (each build tried, and why it was passed over); null when one does. */
export function uwsUnavailable(): { message: string; passedOver: string[] } | null {
  try {
    loadUws();
    return null;
  } catch (err) {
    return { message: (err as Error).message, passedOver: failedBuilds };
  }
}
