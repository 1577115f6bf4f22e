import type { Encoding } from '../bodies/content-coding.js';

/** A few header values cover nearly every client: each is parsed once. */
const MAX_REMEMBERED = 256;

/** The content coding of answers, one per app: it remembers the Accept-Encoding values it has read. */
export class Codings {
  private readonly remembered = new Map<string, Encoding | null>();

  /**
   * The encoding to answer with, from an Accept-Encoding value with its
   * q-values (RFC 9110 12.5.3): br or gzip, the one with the higher q, br
   * when equal; null for the body as it is. `*` stands for any coding not
   * named.
   */
  negotiate(header: string): Encoding | null {
    if (header === '') return null;
    let choice = this.remembered.get(header);
    if (choice !== undefined) return choice;
    choice = parse(header);
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.set(header, choice);
    return choice;
  }
}

function parse(header: string): Encoding | null {
  let br = -1;
  let gzip = -1;
  let star = -1;
  for (const item of header.split(',')) {
    const [name, ...params] = item.split(';');
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k.trim().toLowerCase() === 'q') {
        const n = Number(v?.trim());
        q = Number.isFinite(n) && n >= 0 && n <= 1 ? n : 0;
      }
    }
    const coding = name.trim().toLowerCase();
    if (coding === 'br') br = q;
    else if (coding === 'gzip' || coding === 'x-gzip') gzip = Math.max(gzip, q);
    else if (coding === '*') star = q;
  }
  if (br < 0) br = star;
  if (gzip < 0) gzip = star;
  if (br <= 0 && gzip <= 0) return null;
  return br >= gzip ? 'br' : 'gzip';
}
