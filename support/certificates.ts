import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeTimeEnv, needCommand } from './commands.js';

/**
 * A certificate authority of the tests' own, made by openssl in `dir`, that
 * issues certificates for localhost and 127.0.0.1. Clients trust it through
 * `ca` (a file) or `caPem`.
 */
export class TestAuthority {
  readonly ca: string;

  constructor(readonly dir: string) {
    needCommand('openssl', 'openssl');
    this.ca = join(dir, 'ca.pem');
    this.openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '30', '-subj', '/CN=proxylist test authority']);
    writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  }

  /**
   * Issues `name`.pem and `name`.key for `cn`, valid for `days`; with
   * `expiredDaysAgo`, made under faketime so that it expired that long ago.
   */
  issue(name: string, o: { cn?: string; days?: number; expiredDaysAgo?: number } = {}): { cert: string; key: string } {
    const days = o.days ?? 30;
    this.openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${o.cn ?? 'localhost'}`]);
    const sign = ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', String(days), '-extfile', 'san.cnf'];
    if (o.expiredDaysAgo !== undefined) {
      execFileSync('openssl', sign, { cwd: this.dir, stdio: 'ignore', env: fakeTimeEnv(`-${o.expiredDaysAgo + days}d`) });
    } else {
      this.openssl(sign);
    }
    return { cert: join(this.dir, `${name}.pem`), key: join(this.dir, `${name}.key`) };
  }

  private openssl(args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'ignore' });
  }
}
