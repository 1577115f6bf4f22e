import type { IncomingMessage } from 'node:http';
import { headerText, type Request } from '../engine.js';

const NOT_ASCII = /[\x80-\xff]/;
/**
 * Node reads each byte of a head as one character (latin1); uWebSockets.js
 * reads UTF-8, with U+FFFD for what is not: so do the two engines here.
 */
const asUtf8 = (s: string): string => (NOT_ASCII.test(s) ? Buffer.from(s, 'latin1').toString('utf8') : s);

/** A request on Node's http module, read as uWebSockets.js reads one (engine.ts). */
export class NodeRequest implements Request {
  /** `target`: the request target in origin form; `q`: where its query begins, -1 without one. */
  constructor(private readonly req: IncomingMessage, private readonly target: string, private readonly q: number) {}

  /** The first line of the name, as uWebSockets.js gives it (Node joins or drops repeated ones). */
  getHeader(name: ArrayBuffer): string {
    const want = headerText(name);
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i].length === want.length && raw[i].toLowerCase() === want) return asUtf8(raw[i + 1]);
    }
    return '';
  }

  forEach(cb: (name: string, value: string) => void): void {
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) cb(raw[i].toLowerCase(), asUtf8(raw[i + 1]));
  }

  getMethod(): string {
    return this.req.method!.toLowerCase();
  }

  getCaseSensitiveMethod(): string {
    return this.req.method!;
  }

  getUrl(): string {
    return asUtf8(this.q < 0 ? this.target : this.target.slice(0, this.q));
  }

  getQuery(): string | undefined {
    return this.q < 0 ? undefined : asUtf8(this.target.slice(this.q + 1));
  }
}
