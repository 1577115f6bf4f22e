import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { RedisConnection } from '../../src/access/redis-connection.js';
import { RedisReplyError } from '../../src/access/resp.js';
import { RedisServer } from '../../support/redis.js';
import { eventually } from '../helpers/server.js';

/** The limiter's connection to Redis, against a real redis-server. */

/** A connection, connected, with the errors it reported and a count of its 'ready' events. */
async function watched(url: string, timeoutMs: number): Promise<{ conn: RedisConnection; errors: string[]; readies(): number }> {
  const conn = new RedisConnection({ url, timeoutMs });
  const errors: string[] = [];
  conn.on('error', (e: Error) => errors.push(e.message));
  let readies = 0;
  conn.on('ready', () => readies++);
  conn.connect();
  await eventually(() => readies === 1, 10_000, 'connected');
  return { conn, errors, readies: () => readies };
}
interface Ctx { redis: RedisServer; conn: RedisConnection }
const test = suite<Ctx>('a connection to Redis');
test.before(async (ctx) => {
  ctx.redis = await RedisServer.start();
});
test.after(async (ctx) => {
  await ctx.redis.close();
});
test.before.each(async (ctx) => {
  // A timeout that only bounds a hang: the test that is about the timeout provokes its own.
  ctx.conn = new RedisConnection({ url: ctx.redis.url, timeoutMs: 10_000 });
  ctx.conn.on('error', () => undefined);
  const ready = new Promise((r) => ctx.conn.once('ready', r));
  ctx.conn.connect();
  await ready;
});
test.after.each(async (ctx) => {
  await ctx.conn.close();
});

test('replies of every kind, in order, however the bytes are cut', async ({ conn }) => {
  assert.is(await conn.call(['PING']), 'PONG');
  assert.is(await conn.call(['SET', 'k', 'välue']), 'OK');
  assert.is(await conn.call(['GET', 'k']), 'välue');
  assert.is(await conn.call(['GET', 'missing']), null);
  assert.is(await conn.call(['INCRBY', 'n', '-5']), -5);
  await conn.call(['RPUSH', 'l', 'a', '', 'c']);
  assert.equal(await conn.call(['LRANGE', 'l', '0', '-1']), ['a', '', 'c']);
  const big = 'x'.repeat(3_000_000) + '\r\n' + 'y';
  await conn.call(['SET', 'big', big]);
  assert.is(await conn.call(['GET', 'big']), big, 'a bulk string over many reads, with CRLF inside');
  const err = await conn.call(['INCR', 'k']).then(() => null, (e: Error) => e);
  assert.instance(err, RedisReplyError);
  assert.match(err!.message, 'ERR value is not an integer');
  const many = await Promise.all(Array.from({ length: 2000 }, (_, i) => conn.call(['ECHO', `m${i}`])));
  assert.equal(many, Array.from({ length: 2000 }, (_, i) => `m${i}`), '2,000 pipelined commands answered in order');
});

test('a Redis that stops answering: the call fails after the timeout, and a late reply is never given to the next command', async ({ redis }) => {
  const { conn } = await watched(redis.url, 200);
  await conn.call(['SET', 'late', 'first']);
  redis.pause();
  try {
    const started = performance.now();
    const stuck = await conn.call(['GET', 'late']).then(() => null, (e: Error) => e);
    const waited = performance.now() - started;
    assert.match(stuck?.message ?? '', 'did not answer within 200 ms');
    assert.ok(waited >= 190 && waited < 1000, `failed after ${Math.round(waited)} ms`);
  } finally {
    redis.resume();
  }
  assert.is(await conn.call(['ECHO', 'second']), 'second', 'the next command gets its own reply');
  assert.ok(conn.isReady);
  await conn.close();
});

test('a Redis silent for 5 s: the connection is given up and made again, and serves once Redis answers', async ({ redis }) => {
  const { conn, errors, readies } = await watched(redis.url, 200);
  redis.pause();
  const started = performance.now();
  try {
    // As the limiter's probe does: a PING every half second while Redis is down.
    while (!errors.some((e) => e.includes('has not answered')) && performance.now() - started < 9000) {
      await conn.call(['PING']).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    redis.resume();
  }
  const gaveUp = performance.now() - started;
  assert.ok(errors.some((e) => /has not answered for [5-9] s/.test(e)), errors.join('; '));
  assert.ok(gaveUp >= 4900 && gaveUp < 8000, `given up after ${Math.round(gaveUp)} ms`);
  await eventually(async () => (await conn.call(['PING']).catch(() => null)) === 'PONG', 10_000, 'answering again');
  assert.ok(readies() >= 2, 'connected again');
  await conn.close();
});

test('not connected: a call fails at once; a lost connection fails what is pending, says so, and comes back', async ({ redis }) => {
  const idle = new RedisConnection({ url: redis.url, timeoutMs: 200 });
  const early = await idle.call(['PING']).then(() => null, (e: Error) => e);
  assert.match(early?.message ?? '', 'not connected');

  const { conn, errors, readies } = await watched(redis.url, 5000);
  const admin = createClient({ url: redis.url });
  await admin.connect();
  const pending = conn.call(['BLPOP', 'never', '0']).then(() => null, (e: Error) => e);
  await new Promise((r) => setTimeout(r, 100));
  await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
  const failed = await pending;
  assert.ok(failed instanceof Error && !(failed instanceof RedisReplyError), 'the pending call fails with the connection');
  assert.ok(errors.length >= 1, 'an error event');
  await eventually(() => readies() === 2, 10_000, 'connected again');
  assert.is(await conn.call(['PING']), 'PONG');
  await admin.close();
  await conn.close();
});

test('the URL\'s password, user and database are used', async ({ redis }) => {
  const admin = createClient({ url: redis.url });
  await admin.connect();
  await admin.sendCommand(['ACL', 'SETUSER', 'limiter', 'on', '>s3cret', '~*', '&*', '+@all']);
  try {
    const conn = new RedisConnection({ url: `redis://limiter:s3cret@127.0.0.1:${redis.port}/3`, timeoutMs: 500 });
    conn.on('error', () => undefined);
    const ready = new Promise((r) => conn.once('ready', r));
    conn.connect();
    await ready;
    assert.is(await conn.call(['ACL', 'WHOAMI']), 'limiter');
    await conn.call(['SET', 'in-db-3', 'yes']);
    await conn.close();
    assert.is(await admin.sendCommand(['GET', 'in-db-3']), null, 'not in database 0');
    await admin.sendCommand(['SELECT', '3']);
    assert.is(await admin.sendCommand(['GET', 'in-db-3']), 'yes');

    const wrong = new RedisConnection({ url: `redis://limiter:wrong@127.0.0.1:${redis.port}`, timeoutMs: 500 });
    const errors: string[] = [];
    wrong.on('error', (e: Error) => errors.push(e.message));
    wrong.connect();
    await eventually(() => errors.length > 0, 10_000, 'a refused AUTH');
    assert.match(errors[0], /WRONGPASS|invalid username-password/);
    assert.not.ok(wrong.isReady);
    await wrong.close();
  } finally {
    await admin.sendCommand(['ACL', 'DELUSER', 'limiter']);
    await admin.close();
  }
});

test.run();
