/**
 * RESP2, the protocol of Redis, both ways: commands as arrays of bulk
 * strings, and replies read from a buffer that may end anywhere.
 */

/** A RESP2 reply: simple strings and bulk strings as strings, integers as numbers, arrays, or null. */
export type RespReply = string | number | null | RespReply[];

/** An error reply of Redis (`-ERR ...`), as opposed to a connection failure or a timeout. */
export class RedisReplyError extends Error {}

/** What parseReply answers when the bytes end before the reply does. */
export const INCOMPLETE = Symbol('incomplete');
const CRLF = 0x0d;

/** A command as Redis reads it: an array of bulk strings. */
export function encodeCommand(args: readonly string[]): string {
  let text = `*${args.length}\r\n`;
  for (const a of args) text += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return text;
}

export type Parsed = { value: RespReply | RedisReplyError; end: number } | typeof INCOMPLETE;

/** One RESP2 reply starting at `pos`, or INCOMPLETE when the bytes end before it does. */
export function parseReply(b: Buffer, pos: number): Parsed {
  if (pos >= b.length) return INCOMPLETE;
  const lineEnd = b.indexOf(CRLF, pos + 1);
  if (lineEnd < 0 || lineEnd + 1 >= b.length) return INCOMPLETE;
  const type = b[pos];
  const line = b.toString('latin1', pos + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case 0x2b: // +
      return { value: line, end: next };
    case 0x2d: // -
      return { value: new RedisReplyError(b.toString('utf8', pos + 1, lineEnd)), end: next };
    case 0x3a: // :
      return { value: Number(line), end: next };
    case 0x24: { // $
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (next + length + 2 > b.length) return INCOMPLETE;
      return { value: b.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case 0x2a: { // *
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespReply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(b, at);
        if (item === INCOMPLETE) return INCOMPLETE;
        // An error inside an array (a failed command of a transaction) is kept as its message.
        items.push(item.value instanceof RedisReplyError ? item.value.message : item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected reply type ${JSON.stringify(String.fromCharCode(type))} from Redis`);
  }
}
