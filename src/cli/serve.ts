import { CodedError } from '../core/errors.js';
import { LOG_LEVELS } from '../core/log.js';
import { DEFAULT_CACHE_BYTES, DEFAULT_WHOLE_BODIES_BYTES, startServer, type RunningServer, type ServeOptions } from '../server.js';
import { integerOption, parseOptions } from './args.js';

export const SERVE_USAGE = `proxylist serve --snapshot FILE --keys FILE [--port 8080] [--host 0.0.0.0] [--state FILE]
                [--trust-proxy ADDR,...] [--metrics-allow CIDR,...] [--log-level info] [--access-log] [--cache-mb 128] [--bodies-mb 512]
  environment: PROXYLIST_SNAPSHOT PROXYLIST_KEYS PORT HOST PROXYLIST_STATE PROXYLIST_TRUST_PROXY`;

/** Options from the command line, each falling back to its environment variable (API.md 4). */
export function serveOptions(args: string[], env: NodeJS.ProcessEnv): ServeOptions {
  const { values } = parseOptions(args, {
    snapshot: { type: 'string' },
    keys: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    state: { type: 'string' },
    'trust-proxy': { type: 'string' },
    'metrics-allow': { type: 'string' },
    'log-level': { type: 'string' },
    'access-log': { type: 'boolean' },
    'cache-mb': { type: 'string' },
    'bodies-mb': { type: 'string' },
  });
  const snapshot = values.snapshot ?? env.PROXYLIST_SNAPSHOT;
  const keys = values.keys ?? env.PROXYLIST_KEYS;
  if (!snapshot) throw new CodedError('E_USAGE', 'missing --snapshot FILE (or PROXYLIST_SNAPSHOT)');
  if (!keys) throw new CodedError('E_USAGE', 'missing --keys FILE (or PROXYLIST_KEYS)');
  const logLevel = values['log-level'] ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new CodedError('E_USAGE', `--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const trust = values['trust-proxy'] ?? env.PROXYLIST_TRUST_PROXY;
  const list = (s: string | undefined) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : undefined);
  return {
    snapshot,
    keys,
    port: integerOption('port', values.port ?? env.PORT, 8080, 0, 65535),
    host: values.host ?? env.HOST ?? '0.0.0.0',
    state: values.state ?? env.PROXYLIST_STATE ?? null,
    trustProxy: list(trust) ?? [],
    metricsAllow: list(values['metrics-allow']),
    logLevel,
    accessLog: values['access-log'] ?? false,
    cacheBytes: integerOption('cache-mb', values['cache-mb'], DEFAULT_CACHE_BYTES / 1048576, 0, 65536) * 1048576,
    wholeBodiesBytes: integerOption('bodies-mb', values['bodies-mb'], DEFAULT_WHOLE_BODIES_BYTES / 1048576, 0, 65536) * 1048576,
  };
}

/**
 * The process around a running server: SIGTERM/SIGINT stop it gracefully and
 * exit 0, a second signal exits at once. An uncaught exception leaves the
 * process in an unknown state: it is logged, the usage state saved, and the
 * process exits 1 (for the supervisor to restart it). An unhandled rejection
 * is logged and the server keeps serving.
 */
export function superviseProcess(server: RunningServer, cleanup: () => void = () => undefined): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    server.log.info({ event: 'signal', signal }, `received ${signal}, stopping`);
    server.stop().then(
      () => {
        cleanup();
        process.exit(0);
      },
      (err) => {
        server.log.error({ event: 'stop_failed', err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('uncaughtException', (err) => {
    server.log.fatal({ event: 'uncaught_exception', err }, 'uncaught exception; usage state saved, exiting');
    server.saveState();
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    server.log.error({ event: 'unhandled_rejection', err: reason }, 'unhandled promise rejection; still serving');
  });
}

export async function serveCommand(args: string[]): Promise<void> {
  const server = await startServer(serveOptions(args, process.env));
  superviseProcess(server);
}
