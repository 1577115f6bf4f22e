import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GatedStores, newStoreGate } from '../../src/threads/store-gate.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { Store } from '../../src/store/store.js';
import { buildFromRecords } from '../helpers/build-store.js';

/**
 * The gate (threads/store-gate.ts): two threads' views of one gate. A
 * staged store is served by neither until the gate opens to it, then by
 * both at their next read, whichever reads first; swap listeners run once
 * per store taken.
 */
const test = suite('store gate');

test('a staged store is served by no thread before the gate opens, and by every thread from the first read after', async () => {
  const gate = newStoreGate();
  const [one, two] = [new GatedStores(gate), new GatedStores(gate)];
  const swaps: string[] = [];
  one.onSwap((s) => void swaps.push(`one:${s.source.generation}`));
  two.onSwap((s) => void swaps.push(`two:${s.source.generation}`));
  const { columns, meta } = buildFromRecords(generateRecords({ records: 50, seed: 1, now: 1_000_000 }));
  const stores = [1, 2].map((generation) => new Store(columns, meta, { file: 'x', loadedAtMs: 0, generation }));
  for (const view of [one, two]) view.stage(stores[0]);
  assert.is(one.current, null, 'staged, not served');
  one.open(1);
  assert.is(two.current, stores[0], 'the other thread serves it at its next read, before any message');
  assert.is(one.current, stores[0]);
  await Promise.all([one.commit(), two.commit()]);
  assert.equal(swaps.sort(), ['one:1', 'two:1'], 'each listener once');

  for (const view of [one, two]) view.stage(stores[1]);
  assert.is(two.current, stores[0], 'the older store until the gate opens');
  two.open(2);
  assert.is(one.current, stores[1]);
  await Promise.all([one.commit(), two.commit()]);
  assert.equal(swaps.sort(), ['one:1', 'one:2', 'two:1', 'two:2']);
  assert.is(one.reloadsOk, 2, 'stores taken, counted by a thread without the main feed');
});

test.run();
