import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { INCOMPLETE, RedisReplyError, encodeCommand, parseReply } from '../../src/access/resp.js';

/** RESP2 (access/resp.ts): commands encoded as Redis reads them; replies read whole, or not at all, wherever the bytes end. */
const REPLIES = Buffer.from([
  '+OK\r\n',
  '-ERR wrong number of arguments\r\n',
  ':-42\r\n',
  '$5\r\nhé\r\n\r\n',
  '$-1\r\n',
  '*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n+x\r\n-ERR inside\r\n',
  '*-1\r\n',
  '*0\r\n',
].join(''));

test('every reply kind, read from a buffer cut at every byte: incomplete until whole, then the same value', () => {
  const whole: unknown[] = [];
  for (let pos = 0; pos < REPLIES.length; ) {
    const r = parseReply(REPLIES, pos);
    if (r === INCOMPLETE) throw new Error('the whole buffer is complete');
    whole.push(r.value instanceof RedisReplyError ? `error: ${r.value.message}` : r.value);
    pos = r.end;
  }
  assert.equal(whole, ['OK', 'error: ERR wrong number of arguments', -42, 'hé\r\n', null, [1, 'abc', ['x', 'ERR inside']], null, []]);
  for (let cut = 0; cut < REPLIES.length; cut++) {
    const part = REPLIES.subarray(0, cut);
    const read: unknown[] = [];
    for (let pos = 0; ; ) {
      const r = parseReply(part, pos);
      if (r === INCOMPLETE) break;
      read.push(r.value instanceof RedisReplyError ? `error: ${r.value.message}` : r.value);
      pos = r.end;
    }
    assert.equal(read, whole.slice(0, read.length), `cut at ${cut}`);
  }
});

test('a command is an array of bulk strings, lengths in bytes', () => {
  assert.is(encodeCommand(['SET', 'k', 'é']), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n');
  assert.throws(() => parseReply(Buffer.from('?what\r\n'), 0), /unexpected reply type "\?"/);
});

test.run();
