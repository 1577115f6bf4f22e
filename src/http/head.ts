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
  /** The status code, its reason, and each header's name and value in turn: for an engine that writes them itself. */
  readonly code: number;
  readonly reason: string;
  readonly lines: readonly string[];
}

const LINE_BREAK = /[\r\n]/;
/** On every answer of the service (docs/pages.md): no browser reads a body as another type than the one it is sent as. */
const NOSNIFF: readonly [string, string] = ['X-Content-Type-Options', 'nosniff'];

/**
 * The head of `status` and `headers`, and X-Content-Type-Options. Every name and value is the
 * service's own (what a client sent is echoed in bodies, never in
 * headers): one with a line break is a bug, thrown here rather than sent.
 */
export function head(status: string, headers: Headers): Head {
  let text = status;
  const lines: string[] = [];
  for (const [name, value] of [...headers, NOSNIFF]) {
    if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) throw new Error(`a line break in the response header ${JSON.stringify(name)}`);
    text += `\r\n${name}: ${value}`;
    lines.push(name, value);
  }
  const space = status.indexOf(' ');
  return { status, bytes: Buffer.from(text), code: Number(status.slice(0, space)), reason: status.slice(space + 1), lines };
}
