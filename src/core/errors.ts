/**
 * Every failure at the service's edges (command line, config, keys file,
 * snapshot) is a CodedError: a stable code for programs and a clear message
 * for people. Request handling never throws these; it answers a status.
 */
export type ErrorCode =
  | 'E_USAGE'
  | 'E_SNAPSHOT_READ'
  | 'E_SNAPSHOT_DECODE'
  | 'E_SNAPSHOT_INVALID'
  | 'E_KEYS_READ'
  | 'E_KEYS_INVALID'
  | 'E_KEYS_WRITE'
  | 'E_USAGE_UNAVAILABLE'
  | 'E_LISTEN'
  | 'E_TLS'
  | 'E_UWS_FALLBACK'
  | 'E_BUILD_FAILED';

/**
 * How the command line exits on each failure: 2 for a command line the user
 * can fix by reading --help, 1 for the rest. (What HTTP answers is in
 * http/failures.ts.)
 */
export const EXIT_STATUS: Record<ErrorCode, number> = {
  E_USAGE: 2,
  E_SNAPSHOT_READ: 1,
  E_SNAPSHOT_DECODE: 1,
  E_SNAPSHOT_INVALID: 1,
  E_KEYS_READ: 1,
  E_KEYS_INVALID: 1,
  E_KEYS_WRITE: 1,
  E_USAGE_UNAVAILABLE: 1,
  E_LISTEN: 1,
  E_TLS: 1,
  E_UWS_FALLBACK: 1,
  E_BUILD_FAILED: 1,
};

export class CodedError extends Error {
  constructor(readonly code: ErrorCode, message: string) {
    super(message);
    this.name = 'CodedError';
  }
}

/**
 * What is wrong with a file, from the error a file operation threw, in a
 * few words for a person (the path is the caller's to name): never a stack.
 */
export function fileProblem(err: unknown): string {
  switch ((err as NodeJS.ErrnoException)?.code) {
    case 'ENOENT': return 'no such file, or its folder does not exist';
    case 'EISDIR': return 'it is a folder, not a file';
    case 'ENOTDIR': return 'a part of the path is not a folder';
    case 'EACCES':
    case 'EPERM': return 'permission denied';
    case 'ELOOP': return 'too many symbolic links';
    case 'ENOSPC': return 'no space left on the device';
    case 'EROFS': return 'the file system is read-only';
    default: return messageOf(err).split('\n')[0];
  }
}

/** The message of anything thrown, without a stack. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
