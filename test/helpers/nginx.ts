import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, needCommand } from './cli.js';
import { GroupServer } from '../../support/group-server.js';
import { eventually } from './server.js';

/**
 * A real nginx (Debian's nginx-light) serving a folder as a static origin on
 * a free loopback port, in the foreground, with its own prefix. Creating the
 * file `fail` in the folder makes it answer 500; `slow` makes it send 20 KB/s.
 * With `basicAuth`, every file needs that user and password. Files under
 * `bare/` are sent without ETag and Last-Modified, as an origin that
 * validates nothing sends them.
 */
export class StaticOrigin extends GroupServer {
  readonly root: string;

  private constructor(readonly port: number, basicAuth: { user: string; password: string } | null) {
    // SIGQUIT: nginx's graceful stop.
    super('SIGQUIT');
    this.root = join(this.dir, 'www');
    mkdirSync(this.root);
    mkdirSync(join(this.dir, 'logs'));
    const users = join(this.dir, 'users');
    if (basicAuth) writeFileSync(users, `${basicAuth.user}:{PLAIN}${basicAuth.password}\n`);
    writeFileSync(join(this.dir, 'nginx.conf'), `
daemon off;
${process.getuid?.() === 0 ? 'user root;' : '# not root: workers run as this user'}
worker_processes 1;
pid ${join(this.dir, 'nginx.pid')};
error_log ${join(this.dir, 'logs', 'error.log')} warn;
events { worker_connections 64; }
http {
  access_log ${join(this.dir, 'logs', 'access.log')};
  client_body_temp_path ${join(this.dir, 'body')};
  proxy_temp_path ${join(this.dir, 'proxy')};
  fastcgi_temp_path ${join(this.dir, 'fastcgi')};
  uwsgi_temp_path ${join(this.dir, 'uwsgi')};
  scgi_temp_path ${join(this.dir, 'scgi')};
  server {
    listen 127.0.0.1:${port};
    root ${this.root};
    ${basicAuth ? `auth_basic "origin"; auth_basic_user_file ${users};` : ''}
    location / {
      if (-f ${this.root}/fail) { return 500; }
      if (-f ${this.root}/slow) { set $limit_rate 20k; }
    }
    # SSI drops both validators of what it sends.
    location /bare/ { ssi on; ssi_types *; }
  }
}
`);
  }

  static async start(basicAuth: { user: string; password: string } | null = null): Promise<StaticOrigin> {
    needCommand('nginx', 'nginx-light');
    const [port] = await freePorts(1);
    const o = new StaticOrigin(port, basicAuth);
    await o.run();
    return o;
  }

  url(name: string): string {
    return `http://127.0.0.1:${this.port}/${name}`;
  }

  async run(): Promise<void> {
    this.spawn('nginx', ['-p', this.dir, '-c', join(this.dir, 'nginx.conf'), '-e', join(this.dir, 'logs', 'error.log')]);
    await eventually(async () => (await fetch(this.url('')).catch(() => null)) !== null, 10_000, `nginx on ${this.port}`);
  }

  /** The status codes nginx logged for `name`, in order. */
  statuses(name: string): number[] {
    return readFileSync(join(this.dir, 'logs', 'access.log'), 'utf8').split('\n')
      .filter((l) => l.includes(`GET /${name} `))
      .map((l) => Number(/" (\d{3}) /.exec(l)?.[1]));
  }
}
