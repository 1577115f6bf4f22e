import { existsSync, readFileSync } from 'node:fs';
import { KeyTable, sha256Hex } from '../access/keys.js';
import { writeFileAtomic } from '../core/atomic-write.js';
import { CodedError, messageOf } from '../core/errors.js';
import { formatIsoOffset } from '../core/service-time.js';
import { parseOptions } from './args.js';
import { randomKey } from './demo.js';

export const KEYS_USAGE = `proxylist keys add --keys FILE [--name NAME] [--per-window N|null] [--window-s N|null]
                   [--daily N|null] [--subnets N|null] [--expires ISO-8601]
proxylist keys list --keys FILE
proxylist keys revoke --keys FILE NAME|ID`;

type RawEntry = Record<string, unknown> & { key?: string; sha256?: string; name?: string };
interface RawFile { keys: RawEntry[] }

function readKeysFile(path: string, createIfMissing: boolean): RawFile {
  if (!existsSync(path) && createIfMissing) return { keys: [] };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CodedError('E_KEYS_READ', `cannot read keys file ${path}: ${messageOf(err)}`);
  }
  KeyTable.parse(text); // refuse to edit a file the server would reject
  return JSON.parse(text) as RawFile;
}

/** Validates the result as the server will, then replaces the file in one rename. */
function writeKeysFile(path: string, file: RawFile): void {
  const text = JSON.stringify(file, null, 2) + '\n';
  KeyTable.parse(text);
  writeFileAtomic(path, text);
}

const idOf = (e: RawEntry): string => (e.sha256 ?? sha256Hex(e.key!)).toLowerCase();

function limitValue(name: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'null' || value === 'unlimited') return null;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw new CodedError('E_USAGE', `--${name} must be an integer >= 1, or null for unlimited`);
  return Number(value);
}

function add(args: string[]): void {
  const { values } = parseOptions(args, {
    keys: { type: 'string' }, name: { type: 'string' }, 'per-window': { type: 'string' }, 'window-s': { type: 'string' },
    daily: { type: 'string' }, subnets: { type: 'string' }, expires: { type: 'string' },
  });
  if (!values.keys) throw new CodedError('E_USAGE', 'missing --keys FILE');
  const file = readKeysFile(values.keys, true);
  const key = randomKey();
  const entry: RawEntry = { sha256: sha256Hex(key) };
  if (values.name) {
    if (file.keys.some((e) => e.name === values.name)) throw new CodedError('E_USAGE', `a key named "${values.name}" exists already`);
    entry.name = values.name;
  }
  if (values.expires) entry.expires_at = values.expires;
  const limits: Record<string, number | null> = {};
  for (const [option, field] of [['per-window', 'per_window'], ['window-s', 'window_s'], ['daily', 'daily'], ['subnets', 'subnets']] as const) {
    const v = limitValue(option, values[option]);
    if (v !== undefined) limits[field] = v;
  }
  if (Object.keys(limits).length > 0) entry.limits = limits;
  file.keys.push(entry);
  writeKeysFile(values.keys, file);
  process.stderr.write(`added key ${entry.name ?? ''} (id ${entry.sha256!.slice(0, 8)}); only its SHA-256 is stored, so keep the key now:\n`);
  process.stdout.write(key + '\n');
}

function list(args: string[]): void {
  const { values } = parseOptions(args, { keys: { type: 'string' } });
  if (!values.keys) throw new CodedError('E_USAGE', 'missing --keys FILE');
  const file = readKeysFile(values.keys, false);
  const table = KeyTable.parse(JSON.stringify(file));
  const now = Date.now();
  const limit = (v: number | null): string => (v === null ? 'unlimited' : String(v));
  const rows = file.keys.map((raw) => {
    const e = table.entries.get(idOf(raw))!;
    const status = e.disabled ? 'disabled' : e.expiresAtMs !== null && now >= e.expiresAtMs ? 'expired' : 'active';
    const l = e.limits;
    return [e.id.slice(0, 8), e.name ?? '-', status, e.expiresAtMs === null ? '-' : formatIsoOffset(e.expiresAtMs),
      `${limit(l.perWindow)}/${limit(l.windowS)}s`, limit(l.daily), limit(l.subnets)];
  });
  const header = ['ID', 'NAME', 'STATUS', 'EXPIRES', 'RATE', 'DAILY', 'SUBNETS'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const row of [header, ...rows]) process.stdout.write(row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd() + '\n');
}

function revoke(args: string[]): void {
  const { values, positionals } = parseOptions(args, { keys: { type: 'string' } }, true);
  if (!values.keys || positionals.length !== 1) throw new CodedError('E_USAGE', 'usage: proxylist keys revoke --keys FILE NAME|ID');
  const which = positionals[0];
  const file = readKeysFile(values.keys, false);
  const matches = file.keys.filter((e) => e.name === which || (/^[0-9a-fA-F]{8,64}$/.test(which) && idOf(e).startsWith(which.toLowerCase())));
  if (matches.length === 0) throw new CodedError('E_USAGE', `no key named or with id "${which}"`);
  if (matches.length > 1) throw new CodedError('E_USAGE', `"${which}" matches ${matches.length} keys; give a longer id`);
  matches[0].disabled = true;
  writeKeysFile(values.keys, file);
  process.stdout.write(`revoked ${matches[0].name ?? ''} (id ${idOf(matches[0]).slice(0, 8)})\n`);
}

export function keysCommand(args: string[]): void {
  const [sub, ...rest] = args;
  if (sub === 'add') return add(rest);
  if (sub === 'list') return list(rest);
  if (sub === 'revoke') return revoke(rest);
  throw new CodedError('E_USAGE', KEYS_USAGE);
}
