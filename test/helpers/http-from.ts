import { request } from 'node:http';
import { request as requestTls } from 'node:https';

export interface SimpleResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * GET over a connection from a chosen local address (any 127.x.y.z is this
 * machine on loopback); a header given as a list is sent as that many lines.
 * An https:// URL is reached as localhost, trusting `ca`.
 */
export function getFrom(localAddress: string, url: string, headers: Record<string, string | string[]> = {}, ca?: Buffer): Promise<SimpleResponse> {
  return new Promise((resolve, reject) => {
    const answer = (res: import('node:http').IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    };
    const req = url.startsWith('https:') ? requestTls(url, { localAddress, headers, agent: false, ca, servername: 'localhost' }, answer) : request(url, { localAddress, headers, agent: false }, answer);
    req.on('error', reject);
    req.end();
  });
}
