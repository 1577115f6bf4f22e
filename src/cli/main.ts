#!/usr/bin/env node
import { CodedError, messageOf } from '../core/errors.js';
import { demoCommand } from './demo.js';
import { KEYS_USAGE, keysCommand } from './keys.js';
import { SERVE_USAGE, serveCommand } from './serve.js';
import { SNAPSHOT_USAGE, snapshotCommand } from './snapshot.js';

const USAGE = `usage:
${SERVE_USAGE}
proxylist demo [--port 8080]
${SNAPSHOT_USAGE}
${KEYS_USAGE}
`;

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
      process.stdout.write(USAGE);
      return;
    default:
      throw new CodedError('E_USAGE', `unknown command "${command}"\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const code = err instanceof CodedError ? err.code : 'E_UNEXPECTED';
  process.stderr.write(`proxylist: ${messageOf(err)} [${code}]\n`);
  process.exit(err instanceof CodedError && err.code === 'E_USAGE' ? 2 : 1);
});
