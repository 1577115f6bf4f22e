import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Fails with what to install when a real component the tests start is missing. */
export function needCommand(command: string, debianPackage: string): void {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  if (found.status !== 0) throw new Error(`${command} is not installed: npm run setup installs it (Debian package ${debianPackage}; docs/testing.md)`);
}

/** Where Debian's faketime package puts libfaketime: /usr/lib/<triplet>/faketime/, or /usr/lib/faketime/. */
function libfaketime(): string | null {
  const dirs = ['/usr/lib', ...readdirSync('/usr/lib').map((d) => join('/usr/lib', d))];
  for (const dir of dirs) {
    const lib = join(dir, 'faketime', 'libfaketime.so.1');
    if (existsSync(lib)) return lib;
  }
  return null;
}

/**
 * The environment that runs a program with its clock moved by `offset`
 * (libfaketime's FAKETIME: "-3" is 3 s behind, "-30d" 30 days). The library
 * is preloaded directly, not through the faketime command: that names a
 * semaphore after its own pid and leaves it behind when it is killed, and a
 * later faketime that gets the same pid then fails to start the program.
 */
export function fakeTimeEnv(offset: string): NodeJS.ProcessEnv {
  const lib = libfaketime();
  if (lib === null) throw new Error('libfaketime is not installed: npm run setup installs it (Debian package faketime; docs/testing.md)');
  return { ...process.env, LD_PRELOAD: lib, FAKETIME: offset };
}
