export type Headers = ReadonlyArray<readonly [string, string]>;

/**
 * A response's status and header lines, encoded once and written with one
 * call. uWebSockets.js writes a status as it is given, then CRLF, and
 * appends its own lines (Date, Content-Length) after it: the header lines
 * ride in the status. One `writeHeader` per header would convert two
 * JavaScript strings to UTF-8 in native code each time, for every answer.
 */
export interface Head {
  /** The status line's text, such as `200 OK`: what is counted and logged. */
  readonly status: string;
  /** `status`, then CRLF and `Name: value` for each header. */
  readonly bytes: Uint8Array;
}

const LINE_BREAK = /[\r\n]/;
/** On every answer of the service (docs/pages.md): no browser reads a body as another type than the one it is sent as. */
const NOSNIFF = '\r\nX-Content-Type-Options: nosniff';

/**
 * The head of `status` and `headers`, and X-Content-Type-Options. Every name and value is the
 * service's own (what a client sent is echoed in bodies, never in
 * headers): one with a line break is a bug, thrown here rather than sent.
 */
export function head(status: string, headers: Headers): Head {
  let text = status;
  for (const [name, value] of headers) {
    if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) throw new Error(`a line break in the response header ${JSON.stringify(name)}`);
    text += `\r\n${name}: ${value}`;
  }
  return { status, bytes: Buffer.from(text + NOSNIFF) };
}
