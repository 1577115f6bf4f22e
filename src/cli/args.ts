import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CodedError, messageOf } from '../core/errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * parseArgs with errors turned into usage errors. A negative number after an
 * option that takes a value is that value (`--daily -5`), so that the option's
 * own check can say what is wrong with it.
 */
export function parseOptions<O extends Options>(args: string[], options: O, allowPositionals = false) {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = /^--([\w-]+)$/.exec(args[i])?.[1];
    if (name && options[name]?.type === 'string' && /^-[0-9.]/.test(args[i + 1] ?? '')) joined.push(`${args[i]}=${args[++i]}`);
    else joined.push(args[i]);
  }
  try {
    return parseArgs({ args: joined, options, allowPositionals, strict: true });
  } catch (err) {
    throw new CodedError('E_USAGE', parserMessage(messageOf(err)));
  }
}

export function integerOption(name: string, value: string | undefined, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new CodedError('E_USAGE', `--${name} must be an integer from ${min} to ${max}, not "${value}"`);
  return n;
}

/** A share from 0 to 1 (`0.5`, `1`, `.25`). */
export function shareOption(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(value) ? Number(value) : NaN;
  if (!(n >= 0 && n <= 1)) throw new CodedError('E_USAGE', `--${name} must be a number from 0 to 1, not "${value}"`);
  return n;
}

/** Node's parser explains itself at length: one line, for a person. */
function parserMessage(message: string): string {
  const option = /'(--?[\w-]+)/.exec(message)?.[1] ?? 'an option';
  if (/argument is ambiguous|argument missing/.test(message)) return `${option} needs a value (a value that starts with "-" is not one)`;
  if (/^Unknown option/.test(message)) return `unknown option ${option}`;
  if (/Unexpected argument/.test(message)) return `unexpected argument ${/'([^']*)'/.exec(message)?.[1] ?? ''}`.trim();
  if (/does not take an argument/.test(message)) return `${option} takes no value`;
  return message.split('\n')[0];
}

/**
 * Prints the help a command line asks for, if it does: the command's usage
 * for no subcommand or --help/-h, a subcommand's lines for `SUB --help`.
 * Returns whether it did.
 */
export function printedHelp(args: string[], usage: string, help: Record<string, string>): boolean {
  const [sub, ...rest] = args;
  const asked = (xs: string[]) => xs.includes('--help') || xs.includes('-h');
  const text = sub === undefined || sub === '--help' || sub === '-h' ? usage : help[sub] && asked(rest) ? help[sub] : null;
  if (text !== null) process.stdout.write(text + '\n');
  return text !== null;
}
