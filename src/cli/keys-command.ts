import { existsSync, readFileSync } from 'node:fs';
import { KeyTable, sha256Hex } from '../access/keys.js';
import { writeFileAtomic } from '../core/atomic-write.js';
import { CodedError, fileProblem, messageOf } from '../core/errors.js';
import { maskUrl } from '../core/secret-url.js';
import { formatIsoOffset } from '../core/service-time.js';
import { parseOptions, printedHelp } from './args.js';
import { randomKey } from './demo.js';

export const KEYS_USAGE = `proxylist keys add --keys FILE [options]      a new key, printed once
proxylist keys list --keys FILE              the keys, their status and limits
proxylist keys revoke --keys FILE NAME|ID    disable a key (by name or id prefix)
proxylist keys enable --keys FILE NAME|ID    enable a revoked key again
proxylist keys usage --url URL [--json]      every key's usage today, from a running server's /usage`;

const HELP: Record<string, string> = {
  add: `usage: proxylist keys add --keys FILE [options]
  --keys FILE           the keys file; created if missing
  --name NAME           a name for logs and for revoke/enable
  --per-window N|null   accepted requests per window (default 2; null: no limit)
  --window-s N|null     the window in seconds (default 5)
  --daily N|null        accepted requests per UTC+02:00 day (default 34560)
  --subnets N|null      distinct /16 client subnets per day (default 10)
  --expires TIME        when the key stops working, ISO 8601 (2027-01-31T00:00:00+02:00)`,
  list: `usage: proxylist keys list --keys FILE
  --keys FILE           the keys file`,
  revoke: `usage: proxylist keys revoke --keys FILE NAME|ID
  --keys FILE           the keys file
  NAME|ID               the key's name, or the start of its id (4 hex digits or more, as keys list shows)`,
  enable: `usage: proxylist keys enable --keys FILE NAME|ID
  --keys FILE           the keys file
  NAME|ID               the key's name, or the start of its id (4 hex digits or more, as keys list shows)`,
  usage: `usage: proxylist keys usage --url URL [--json]
  --url URL             a running server, http://host:port (its /usage answers addresses in --metrics-allow)
  --json                the document as the server answers it, not a table`,
};

type RawEntry = Record<string, unknown> & { key?: string; sha256?: string; name?: string };
interface RawFile { keys: RawEntry[] }

function readKeysFile(path: string, createIfMissing: boolean): RawFile {
  if (!existsSync(path) && createIfMissing) return { keys: [] };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CodedError('E_KEYS_READ', `cannot read keys file ${path}: ${fileProblem(err)}`);
  }
  KeyTable.parse(text); // refuse to edit a file the server would reject
  return JSON.parse(text) as RawFile;
}

/** Validates the result as the server will, then replaces the file in one rename. */
function writeKeysFile(path: string, file: RawFile): void {
  const text = JSON.stringify(file, null, 2) + '\n';
  KeyTable.parse(text);
  try {
    writeFileAtomic(path, text);
  } catch (err) {
    throw new CodedError('E_KEYS_WRITE', `cannot write keys file ${path}: ${fileProblem(err)}`);
  }
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
  if (values.expires) {
    const at = /^\d{4}-\d{2}-\d{2}T/.test(values.expires) ? Date.parse(values.expires) : NaN;
    if (Number.isNaN(at)) throw new CodedError('E_USAGE', `--expires must be an ISO 8601 time such as 2027-01-31T00:00:00+02:00, not "${values.expires}"`);
    if (at <= Date.now()) process.stderr.write(`warning: --expires ${values.expires} has passed: the key is added, but already expired\n`);
    entry.expires_at = values.expires;
  }
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
    const e = table.get(idOf(raw))!;
    const status = e.disabled ? 'disabled' : e.expiresAtMs !== null && now >= e.expiresAtMs ? 'expired' : 'active';
    const l = e.limits;
    return [e.id.slice(0, 8), e.name ?? '-', status, e.expiresAtMs === null ? '-' : formatIsoOffset(e.expiresAtMs),
      `${limit(l.perWindow)}/${limit(l.windowS)}s`, limit(l.daily), limit(l.subnets)];
  });
  printTable(['ID', 'NAME', 'STATUS', 'EXPIRES', 'RATE', 'DAILY', 'SUBNETS'], rows);
}

/** The lines of a table: a header, then rows, each column as wide as its widest cell. */
function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const row of [header, ...rows]) process.stdout.write(row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd() + '\n');
}

interface UsageDocument {
  day: string;
  limiter: string;
  keys: Array<{ id: string; name: string | null; today: number | null; subnets: number | null; limits: { per_window: number | null; window_s: number | null; daily: number | null; subnets: number | null } }>;
}

/** Every key's usage today, as a running server's /usage says (with Redis, every instance's). */
async function usage(args: string[]): Promise<void> {
  const { values } = parseOptions(args, { url: { type: 'string' }, json: { type: 'boolean' } });
  if (!values.url) throw new CodedError('E_USAGE', 'missing --url URL (a running server, http://host:port)');
  if (!/^https?:\/\/[^/]/i.test(values.url)) throw new CodedError('E_USAGE', `--url must be http://host:port or https://host:port, not "${maskUrl(values.url)}"`);
  const target = `${values.url.replace(/\/+$/, '')}/usage`;
  let res: Response;
  try {
    res = await fetch(target, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    throw new CodedError('E_USAGE_UNAVAILABLE', `cannot reach ${maskUrl(target)}: ${messageOf(cause ?? err)}`);
  }
  const text = await res.text();
  if (res.status !== 200) throw new CodedError('E_USAGE_UNAVAILABLE', `${maskUrl(target)} answered ${res.status}: ${text.split('\n')[0].slice(0, 200)}`);
  if (values.json) {
    process.stdout.write(text.endsWith('\n') ? text : text + '\n');
    return;
  }
  const doc = JSON.parse(text) as UsageDocument;
  const shown = (v: number | null): string => (v === null ? '-' : String(v));
  const limit = (v: number | null): string => (v === null ? 'unlimited' : String(v));
  process.stdout.write(`day ${doc.day}, limiter ${doc.limiter}${doc.limiter === 'memory' ? ' (this instance\'s counts)' : ' (every instance\'s counts)'}\n`);
  printTable(['ID', 'NAME', 'TODAY', 'SUBNETS', 'RATE', 'DAILY', 'SUBNET LIMIT'], doc.keys.map((k) => [
    k.id, k.name ?? '-', shown(k.today), shown(k.subnets), k.limits.per_window === null ? 'unlimited' : `${k.limits.per_window}/${k.limits.window_s}s`, limit(k.limits.daily), limit(k.limits.subnets),
  ]));
}

/** Revokes (disabled) or enables a key found by name or id prefix. */
function setDisabled(args: string[], disabled: boolean): void {
  const verb = disabled ? 'revoke' : 'enable';
  const { values, positionals } = parseOptions(args, { keys: { type: 'string' } }, true);
  if (!values.keys || positionals.length !== 1) throw new CodedError('E_USAGE', `usage: proxylist keys ${verb} --keys FILE NAME|ID`);
  const which = positionals[0];
  const file = readKeysFile(values.keys, false);
  // A name matches as it is; otherwise any unique start of an id of 4 hex digits or more.
  const named = file.keys.filter((e) => e.name === which);
  const matches = named.length > 0 ? named : /^[0-9a-fA-F]{4,64}$/.test(which) ? file.keys.filter((e) => idOf(e).startsWith(which.toLowerCase())) : [];
  if (matches.length === 0) {
    const hint = /^[0-9a-fA-F]{1,3}$/.test(which) ? ' (an id prefix needs 4 hex digits or more)' : '';
    throw new CodedError('E_USAGE', `no key named or with an id starting "${which}"${hint}`);
  }
  if (matches.length > 1) {
    const candidates = matches.map((e) => `${idOf(e).slice(0, 8)}${e.name ? ` (${e.name})` : ''}`).join(', ');
    throw new CodedError('E_USAGE', `"${which}" matches ${matches.length} keys: ${candidates}; give more of the id`);
  }
  const entry = matches[0];
  const label = `${entry.name ? `${entry.name} ` : ''}(id ${idOf(entry).slice(0, 8)})`;
  if ((entry.disabled === true) === disabled) {
    process.stdout.write(`${label} is ${disabled ? 'revoked' : 'enabled'} already; nothing changed\n`);
    return;
  }
  if (disabled) entry.disabled = true;
  else delete entry.disabled;
  writeKeysFile(values.keys, file);
  process.stdout.write(`${disabled ? 'revoked' : 'enabled'} ${label}\n`);
}

export function keysCommand(args: string[]): void | Promise<void> {
  if (printedHelp(args, KEYS_USAGE, HELP)) return;
  const [sub, ...rest] = args;
  if (sub === 'add') return add(rest);
  if (sub === 'list') return list(rest);
  if (sub === 'revoke') return setDisabled(rest, true);
  if (sub === 'enable') return setDisabled(rest, false);
  if (sub === 'usage') return usage(rest);
  throw new CodedError('E_USAGE', `unknown keys command "${sub}"; see proxylist keys --help`);
}
