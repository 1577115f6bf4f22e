import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { captureLog } from '../helpers/log.js';
import { TEST_KEY, TEST_NOW_S, startTestServer, type TestServer } from '../helpers/server.js';

const { log, lines } = captureLog();
const snapshot = encodeSnapshot(generateRecords({ records: 200, seed: 8, now: TEST_NOW_S }), TEST_NOW_S);
const keys = { keys: [{ key: TEST_KEY, name: 'acme', limits: { per_window: null, daily: null, subnets: null } }] };

const test = suite<{ t: TestServer }>('access log');
test.after((ctx) => ctx.t?.close());

test('with --access-log: method, path, status, bytes, µs and key name; never the key or the query', async (ctx) => {
  // The logger captured here is the main thread's (a serving thread writes its lines to standard output itself): one thread.
  const t = (ctx.t = await startTestServer({ snapshot, keys, options: { accessLog: true, log, threads: 1 } }));
  const body = await (await t.api('count=4&country=us')).text();
  await (await t.get('/api?key=wrong-secret&count=1')).text();
  await (await t.get('/elsewhere')).text();
  await new Promise((r) => setTimeout(r, 50));
  const access = lines.filter((l) => l.event === 'access');
  assert.is(access.length, 3);
  assert.equal({ ...access[0], us: 0 }, { ...access[0], method: 'GET', path: '/api', status: 200, bytes: Buffer.byteLength(body), key: 'acme', us: 0 });
  assert.ok((access[0].us as number) > 0);
  assert.equal([access[1].status, access[1].key], [401, null]);
  assert.equal([access[2].path, access[2].status], ['/elsewhere', 404]);
  const everything = JSON.stringify(lines);
  assert.not.match(everything, TEST_KEY);
  assert.not.match(everything, 'wrong-secret');
  assert.not.match(everything, 'country=us');
});

test.run();
