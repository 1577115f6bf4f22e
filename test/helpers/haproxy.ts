import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { needCommand, stopGroup } from './cli.js';

/** deploy/haproxy.cfg as shipped. */
export const SHIPPED_HAPROXY = readFileSync(fileURLToPath(new URL('../../../deploy/haproxy.cfg', import.meta.url)), 'utf8');

export interface HaproxyPlaces {
  /** The port of the HTTPS frontend (443 as shipped). */
  front: number;
  /** The port of the redirect to HTTPS (80 as shipped); none: that frontend is left out. */
  redirect?: number;
  /** The certificate, its chain and its key in one file; none: the front speaks plain HTTP, for tests of balancing rather than TLS. */
  pem?: string;
  /** The instances' ports, in place of the shipped 8081-8083 (the servers beyond them are left out). */
  instances: number[];
}

/** The shipped configuration with only its places moved: addresses on loopback, free ports, the test's certificate. */
export function haproxyConfig(p: HaproxyPlaces): string {
  let text = SHIPPED_HAPROXY.replace(/^( *bind) :443 ssl crt \S+/m, (_, bind: string) => (p.pem ? `${bind} 127.0.0.1:${p.front} ssl crt ${p.pem}` : `${bind} 127.0.0.1:${p.front}`));
  if (!p.pem) text = text.replace(/ alpn h2,http\/1\.1/, '');
  text = p.redirect === undefined ? text.replace(/^frontend redirect\n(?: .*\n)*/m, '') : text.replace(/^( *bind) :80$/m, `$1 127.0.0.1:${p.redirect}`);
  return text.replace(/^( *server proxylist-808)([1-3]) 127\.0\.0\.1:808[1-3](.*)$/gm, (_line, head: string, i: string, tail: string) => {
    const port = p.instances[Number(i) - 1];
    return port === undefined ? '' : `${head}${i} 127.0.0.1:${port}${tail}`;
  });
}

/** `haproxy -c` of a configuration: null when it is valid, else what haproxy said. */
export function haproxyCheck(file: string): string | null {
  needCommand('haproxy', 'haproxy');
  const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
  return check.status === 0 ? null : check.stdout + check.stderr;
}

/** haproxy started on `config`, written into `dir`, in a process group of its own; stop() ends it. */
export function startHaproxy(dir: string, config: string, name = 'haproxy.cfg'): { file: string; proc: ChildProcess; stop(): Promise<void> } {
  needCommand('haproxy', 'haproxy');
  const file = join(dir, name);
  writeFileSync(file, config);
  const proc = spawn('haproxy', ['-db', '-f', file], { stdio: 'ignore', detached: true });
  return { file, proc, stop: () => stopGroup(proc) };
}
