import { startServer, type RunningServer, type ServeOptions } from '../server.js';
import { parseOptions } from './args.js';
import { readServeOptions, serveArgsConfig, serveHelp } from './serve-options.js';

export const SERVE_USAGE = 'proxylist serve --snapshot FILE|URL --keys FILE [options]   (proxylist serve --help lists them)';

/** Options from the command line, each falling back to its environment variable (docs/operations.md). */
export function serveOptions(args: string[], env: NodeJS.ProcessEnv): ServeOptions {
  const { values } = parseOptions(args, { ...serveArgsConfig, help: { type: 'boolean', short: 'h' } });
  return readServeOptions(values, env);
}

/**
 * The process around a running server: SIGTERM/SIGINT stop it gracefully and
 * exit 0, a second signal exits at once. An uncaught exception leaves the
 * process in an unknown state: it is logged, the usage state saved, and the
 * process exits 1 (for the supervisor to restart it); so does a serving
 * thread that dies. An unhandled rejection
 * is logged and the server keeps serving.
 */
export function superviseProcess(server: RunningServer, cleanup: () => void = () => undefined): void {
  let stopping = false;
  /** Exits once the other serving threads have closed their apps: Node aborts a process that ends with one still open. */
  const exit = (code: number): void => {
    void server.killThreads().finally(() => process.exit(code));
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return exit(1);
    stopping = true;
    server.log.info({ event: 'signal', signal }, `received ${signal}, stopping`);
    // A balancer's SIGTERM drains first; a person's Ctrl+C stops accepting at once.
    server.stop(signal === 'SIGTERM').then(
      () => {
        cleanup();
        process.exit(0);
      },
      (err) => {
        server.log.error({ event: 'stop_failed', err }, 'stop failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('uncaughtException', (err) => {
    server.log.fatal({ event: 'uncaught_exception', err }, 'uncaught exception; usage state saved, exiting');
    server.saveState();
    exit(1);
  });
  // A serving thread that died said why in one line (threads/serving-threads.ts): the process ends, for its supervisor to start it again.
  server.onThreadDeath(() => {
    server.saveState();
    exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    server.log.error({ event: 'unhandled_rejection', err: reason }, 'unhandled promise rejection; still serving');
  });
}

export async function serveCommand(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(serveHelp() + '\n');
    return;
  }
  const server = await startServer(serveOptions(args, process.env));
  superviseProcess(server);
}
