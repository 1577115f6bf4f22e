#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CodedError, EXIT_STATUS, messageOf } from '../core/errors.js';
import { demoCommand } from './demo.js';
import { KEYS_USAGE, keysCommand } from './keys-command.js';
import { SERVE_USAGE, serveCommand } from './serve.js';
import { SNAPSHOT_USAGE, snapshotCommand } from './snapshot.js';

const USAGE = `usage:
${SERVE_USAGE}
proxylist demo [--port 8080] [--host 127.0.0.1]
${SNAPSHOT_USAGE}
${KEYS_USAGE}
proxylist --version
Each command answers --help.
`;

/** The version in package.json, two folders up from the built file. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case 'serve':
      return serveCommand(args);
    case 'demo':
      return demoCommand(args);
    case 'snapshot':
      return snapshotCommand(args);
    case 'keys':
      return keysCommand(args);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    case '--version':
    case '-v':
      process.stdout.write(`proxylist ${version()}\n`);
      return;
    default:
      throw new CodedError('E_USAGE', `unknown command "${command}"; see proxylist --help`);
  }
}

// On a Node.js the service does not run on, one line and nothing else (docs/operations.md, Where it runs).
const { unsupported } = createRequire(import.meta.url)('../../../scripts/check-node.cjs') as { unsupported(version: string): string | null };
const stop = unsupported(process.versions.node);
if (stop) {
  process.stderr.write(stop + '\n');
  process.exit(1);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // One line for a person; the stack only for what nobody foresaw.
  const message = err instanceof CodedError ? messageOf(err) : `unexpected error: ${err instanceof Error ? err.stack : String(err)}`;
  process.stderr.write(`proxylist: ${message}\n`);
  process.exit(err instanceof CodedError ? EXIT_STATUS[err.code] : 1);
});
