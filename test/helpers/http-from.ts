import { request } from 'node:http';

export interface SimpleResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET over a connection from a chosen local address (any 127.x.y.z is this machine on loopback); a header given as a list is sent as that many lines. */
export function getFrom(localAddress: string, url: string, headers: Record<string, string | string[]> = {}): Promise<SimpleResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
