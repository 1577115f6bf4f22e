import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CodedError, messageOf } from '../core/errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs with errors turned into usage errors. */
export function parseOptions<O extends Options>(args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    throw new CodedError('E_USAGE', messageOf(err));
  }
}

export function integerOption(name: string, value: string | undefined, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new CodedError('E_USAGE', `--${name} must be an integer from ${min} to ${max}, not "${value}"`);
  return n;
}
