import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KnownKeys, LONGEST_REMEMBERED } from '../../src/access/known-keys.js';

test('a remembered key is found by an equal string, and only by it', () => {
  const known = new KnownKeys(1000);
  const keys = Array.from({ length: 1000 }, (_, i) => `key-${i.toString(36)}-${'x'.repeat(i % 40)}`);
  keys.forEach((k, i) => known.set(k, i * 3));
  keys.forEach((k, i) => assert.is(known.get(`${k}`), i * 3, k));
  // Strings made afresh, as a request's are, and near misses.
  keys.forEach((k, i) => assert.is(known.get(Buffer.from(k).toString()), i * 3));
  assert.is(known.get('key-0-x'), -1);
  assert.is(known.get(`${keys[5]}y`), -1);
  assert.is(known.get(keys[5].slice(0, -1)), -1);
  assert.is(known.get(''), -1);
});

test('keys whose hashes collide are told apart by their characters', () => {
  const known = new KnownKeys(8);
  // FNV-1a of two code units collides for many pairs: these share the slot they start from.
  known.set('Aa', 1);
  known.set('BB', 2);
  assert.is(known.get('Aa'), 1);
  assert.is(known.get('BB'), 2);
  assert.is(known.get('AB'), -1);
});

test('characters beyond Latin-1 and keys across arena chunks are kept exactly', () => {
  const known = new KnownKeys(5000);
  const long = 'k'.repeat(LONGEST_REMEMBERED);
  for (let i = 0; i < 4000; i++) known.set(`${long.slice(0, 100 + (i % 300))}-${i}-ключ-🔑`, i);
  for (let i = 0; i < 4000; i++) assert.is(known.get(`${long.slice(0, 100 + (i % 300))}-${i}-ключ-🔑`), i);
  assert.is(known.get(`${long.slice(0, 100)}-0-ключ-🔐`), -1);
});

test('a key too long, or past the table size, is not remembered; one set again keeps its first position', () => {
  const known = new KnownKeys(2);
  known.set('k'.repeat(LONGEST_REMEMBERED + 1), 0);
  assert.is(known.get('k'.repeat(LONGEST_REMEMBERED + 1)), -1);
  known.set('a', 1);
  known.set('a', 5);
  known.set('b', 2);
  known.set('c', 3);
  assert.is(known.get('a'), 1);
  assert.is(known.get('b'), 2);
  assert.is(known.get('c'), -1);
});

test.run();
