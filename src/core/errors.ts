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
  | 'E_LISTEN'
  | 'E_UWS_FALLBACK';

export class CodedError extends Error {
  constructor(readonly code: ErrorCode, message: string) {
    super(message);
    this.name = 'CodedError';
  }
}

/** The message of anything thrown, without a stack. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
