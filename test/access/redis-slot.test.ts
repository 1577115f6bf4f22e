import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keysOf } from '../../src/access/redis-function.js';
import { sha256Hex } from '../../src/access/keys.js';
import { slotOf } from '../../src/access/redis-slot.js';
import { RedisCluster } from '../helpers/redis-cluster.js';

/**
 * The hash slot of a key, as a real Redis Cluster computes it (CLUSTER
 * KEYSLOT): plain keys, hash tags, empty and unclosed braces, UTF-8; and the
 * three keys of each access key share one slot.
 */
test('slotOf agrees with CLUSTER KEYSLOT of a real cluster, and the keys of one access key share a slot', async () => {
  const cluster = await RedisCluster.start();
  try {
    const keys = [
      'a', '123456789', '{user1000}.following', '{user1000}.followers', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '{', '}{', 'ключ{тег}', 'ключ',
      ...Array.from({ length: 40 }, () => randomBytes(12).toString('base64')),
      ...Array.from({ length: 20 }, (_, i) => keysOf(sha256Hex(`key-${i}`))[i % 3]),
    ];
    const node = cluster.nodes[0];
    for (const key of keys) assert.is(slotOf(key), Number(cluster.cli(node, 'CLUSTER', 'KEYSLOT', key).trim()), key);
    for (let i = 0; i < 50; i++) {
      const [w, d, n] = keysOf(sha256Hex(`access-${i}`));
      assert.ok(slotOf(w) === slotOf(d) && slotOf(d) === slotOf(n), `keys of access-${i} in one slot`);
    }
    // The slots of many access keys spread over every primary.
    const slots = new Set(Array.from({ length: 300 }, (_, i) => Math.floor(slotOf(keysOf(sha256Hex(`spread-${i}`))[0]) / 5462)));
    assert.is(slots.size, 3);
  } finally {
    await cluster.close();
  }
});

test.run();
