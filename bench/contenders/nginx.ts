import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startPinned, type Captured } from '../harness.js';

/**
 * What an operator could run instead: nginx (Debian's nginx-light), one
 * worker on the server's core (or `workers` on `cores`), serving the bodies the server answered, from
 * pre-rendered files chosen by the query string; sendfile, an open-file
 * cache and long keep-alive. With `tls`, over HTTPS with that certificate,
 * TLS 1.2 and 1.3, as the server speaks it.
 */
export function startNginx(captured: readonly Captured[], port: number, dir: string, tls?: { cert: string; key: string }, o: { workers?: number; cores?: string } = {}): ChildProcess {
  const root = join(dir, 'www');
  mkdirSync(join(dir, 'logs'), { recursive: true });
  mkdirSync(root, { recursive: true });
  const map = captured.map((c, i) => {
    const json = c.headers.some(([name, value]) => name.toLowerCase() === 'content-type' && value.includes('json'));
    const name = `body-${i}.${json ? 'json' : 'txt'}`;
    copyFileSync(c.file, join(root, name));
    const args = c.path.slice(c.path.indexOf('?') + 1).replace(/["\\]/g, '\\$&');
    return `    "${args}" /${name};`;
  });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `
daemon off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes ${o.workers ?? 1};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'logs', 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  open_file_cache max=1000 inactive=600s;
  open_file_cache_valid 600s;
  keepalive_timeout 600s;
  keepalive_requests 10000000;
  types { text/plain txt; application/json json; }
  charset utf-8;
  charset_types text/plain application/json;
  map_hash_bucket_size 256;
  map $args $body {
    default /none;
${map.join('\n')}
  }
  server {
    listen 127.0.0.1:${port}${tls ? ' ssl' : ''};
    ${tls ? `ssl_certificate ${tls.cert}; ssl_certificate_key ${tls.key}; ssl_protocols TLSv1.2 TLSv1.3;` : ''}
    root ${root};
    location = /api { try_files $body =404; }
  }
}
`);
  return startPinned('nginx', ['-p', dir, '-c', conf, '-e', join(dir, 'logs', 'error.log')], o.cores);
}
