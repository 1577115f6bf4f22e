import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KnownKeys, LONGEST_REMEMBERED } from '../../src/access/known-keys.js';

/** The position remembered for `key`, or -1. */
function positionOf(known: KnownKeys, key: string): number {
  const slot = known.slotOf(key);
  return slot < 0 ? -1 : known.positionAt(slot);
}

test('a remembered key is found by an equal string, and only by it', () => {
  const known = new KnownKeys(1000);
  const keys = Array.from({ length: 1000 }, (_, i) => `key-${i.toString(36)}-${'x'.repeat(i % 40)}`);
  keys.forEach((k, i) => known.set(k, i * 3, Infinity));
  keys.forEach((k, i) => assert.is(positionOf(known, `${k}`), i * 3, k));
  // Strings made afresh, as a request's are, and near misses.
  keys.forEach((k, i) => assert.is(positionOf(known, Buffer.from(k).toString()), i * 3));
  assert.is(positionOf(known, 'key-0-x'), -1);
  assert.is(positionOf(known, `${keys[5]}y`), -1);
  assert.is(positionOf(known, keys[5].slice(0, -1)), -1);
  assert.is(positionOf(known, ''), -1);
});

test('keys whose hashes collide are told apart by their characters', () => {
  const known = new KnownKeys(8);
  // FNV-1a of two code units collides for many pairs: these share the slot they start from.
  known.set('Aa', 1, Infinity);
  known.set('BB', 2, Infinity);
  assert.is(positionOf(known, 'Aa'), 1);
  assert.is(positionOf(known, 'BB'), 2);
  assert.is(positionOf(known, 'AB'), -1);
});

test('keys across arena chunks and Latin-1 characters are kept exactly; a key beyond Latin-1 is not remembered', () => {
  const known = new KnownKeys(5000);
  const long = 'k'.repeat(LONGEST_REMEMBERED - 20);
  for (let i = 0; i < 4000; i++) known.set(`${long.slice(0, 100 + (i % 300))}-${i}-clé-ÿ`, i, Infinity);
  for (let i = 0; i < 4000; i++) assert.is(positionOf(known, `${long.slice(0, 100 + (i % 300))}-${i}-clé-ÿ`), i);
  assert.is(positionOf(known, `${long.slice(0, 100)}-0-clé-þ`), -1);
  assert.is(known.set('ключ-🔑', 4001, Infinity), -1);
  assert.is(positionOf(known, 'ключ-🔑'), -1);
  assert.is(positionOf(known, 'ключ-🔐'), -1);
});

test('a table sized for any number of keys holds them all and finds each', () => {
  for (const capacity of [1, 5, 6, 7, 100, 3001]) {
    const known = new KnownKeys(capacity);
    for (let i = 0; i < capacity; i++) assert.ok(known.set(`k${i}`, i, Infinity) >= 0, `${capacity}: k${i}`);
    for (let i = 0; i < capacity; i++) assert.is(positionOf(known, `k${i}`), i);
    assert.is(known.set('one more', capacity, Infinity), -1);
    assert.is(positionOf(known, `k${capacity}`), -1);
  }
});

test('a key too long, or past the table size, is not remembered; one set again keeps its first position', () => {
  const known = new KnownKeys(2);
  known.set('k'.repeat(LONGEST_REMEMBERED + 1), 0, Infinity);
  assert.is(positionOf(known, 'k'.repeat(LONGEST_REMEMBERED + 1)), -1);
  known.set('a', 1, Infinity);
  known.set('a', 5, Infinity);
  known.set('b', 2, Infinity);
  known.set('c', 3, Infinity);
  assert.is(positionOf(known, 'a'), 1);
  assert.is(positionOf(known, 'b'), 2);
  assert.is(positionOf(known, 'c'), -1);
});

test('a slot says until when its key may be used', () => {
  const known = new KnownKeys(3);
  const a = known.set('a', 0, 1234.5);
  const b = known.set('b', 1, -Infinity);
  assert.is(known.usableUntilAt(known.slotOf('a')), 1234.5);
  assert.is(known.usableUntilAt(b), -Infinity);
  assert.is.not(a, b);
});

test.run();
