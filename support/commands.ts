import { spawnSync } from 'node:child_process';

/** Fails with what to install when a real component the tests start is missing. */
export function needCommand(command: string, debianPackage: string): void {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  if (found.status !== 0) throw new Error(`${command} is not installed: npm run setup installs it (Debian package ${debianPackage}; docs/testing.md)`);
}
