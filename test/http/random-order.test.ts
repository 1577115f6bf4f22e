import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, type TestServer, serverSuite } from '../helpers/server.js';

/** sort=random (docs/api.md, Parameters): a uniformly random order, drawn afresh for each request. */
const records = generateRecords({ records: 2000, seed: 51, now: TEST_NOW_S });
// 25 rows that match a query of their own: one country, moved into the window.
const matching = records.slice(0, 25).map((r, i) => ({ ...r, country: 'ZW', ip: `198.51.100.${i + 1}`, checked_at: TEST_NOW_S - 10 }));
const test = serverSuite('sort=random', () => ({ snapshot: encodeSnapshot([...records.filter((r) => r.country.toUpperCase() !== 'ZW'), ...matching], TEST_NOW_S) }));

const lines = async (t: TestServer, q: string): Promise<string[]> => (await (await t.api(q)).text()).split('\n').filter(Boolean);

test('the 25 matching rows, each time all of them, in orders that differ from request to request', async ({ t }) => {
  const ordered = await lines(t, 'country=zw');
  assert.is(ordered.length, 25);
  const orders = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const got = await lines(t, 'country=zw&sort=random');
    assert.equal([...got].sort(), [...ordered].sort(), 'the same rows');
    orders.add(got.join(','));
  }
  // 20 draws of 25! orders: a repeat is all but impossible, unless the order is not drawn.
  assert.ok(orders.size >= 19, `${orders.size} distinct orders in 20 requests`);
});

test('count=1 is one random proxy: different ones across requests; offset pages through one draw', async ({ t }) => {
  const seen = new Set<string>();
  for (let i = 0; i < 40; i++) {
    const got = await lines(t, 'country=zw&sort=random&count=1');
    assert.is(got.length, 1);
    seen.add(got[0]);
  }
  assert.ok(seen.size >= 10, `${seen.size} distinct proxies in 40 requests of one`);
  assert.is((await lines(t, 'country=zw&sort=random&offset=20')).length, 5);
  const body = await (await t.api('country=zw&sort=random&get=json&format=object&wrap=1&pretty=0&count=3')).json() as { count: number; filters: Record<string, unknown> };
  assert.is(body.count, 3);
  assert.equal(Object.keys(body.filters), ['time', 'country', 'cm', 'sort', 'count']);
  assert.is(body.filters.sort, 'random');
});

test.run();
