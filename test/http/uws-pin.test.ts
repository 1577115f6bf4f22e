import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { uwsUnavailable } from '../../src/http/uws/load.js';
import { selectEngine } from '../../src/http/engines.js';
import { captureLog } from '../helpers/log.js';
import { startTestServer } from '../helpers/server.js';
import { version } from '../helpers/snapshots.js';

/**
 * The native build that loads, named and pinned (docs/operations.md, What
 * installs and what loads): the operator's /health and `engine_selected`
 * name its package, version and the SHA-256 of its `.node` file;
 * `--uws-sha256` with another digest leaves it unloaded, the node engine
 * serves, and `uws_refused` says why.
 */
const test = suite('the uWebSockets.js build, named and pinned');
const WRONG = 'a'.repeat(64);
const uwsLoads = uwsUnavailable() === null;

interface WholeHealth {
  engine: string;
  engine_build: { package: string; version: string; sha256: string } | null;
}

async function served(uwsSha256?: string[]): Promise<{ health: WholeHealth; events: (name: string) => Array<Record<string, unknown>> }> {
  const { log, events } = captureLog();
  const t = await startTestServer({ snapshot: version(1, 200), options: { engine: 'auto', threads: 1, log, uwsSha256 } });
  try {
    const health = (await (await t.get('/health')).json()) as WholeHealth;
    return { health, events };
  } finally {
    await t.close();
    // The next server of this process chooses again without a pin.
    selectEngine('auto');
  }
}

test('the log and /health name the build that loads, with the SHA-256 of its file; the node engine names none', async () => {
  const { health, events } = await served();
  const [selected] = events('engine_selected');
  if (uwsLoads) {
    assert.is(health.engine, 'uws');
    assert.match(health.engine_build!.sha256, /^[0-9a-f]{64}$/);
    assert.ok(health.engine_build!.package.length > 0 && health.engine_build!.version.length > 0);
    assert.equal(selected.native, health.engine_build);
  } else {
    assert.is(health.engine, 'node');
    assert.is(health.engine_build, null);
  }
});

test('another digest in --uws-sha256: nothing loaded, the node engine serves, and one line says why', async () => {
  const { health, events } = await served([WRONG]);
  assert.is(health.engine, 'node');
  assert.is(health.engine_build, null);
  // Where a build has a binary here, it was looked at and refused; elsewhere none was there to refuse.
  assert.is(events('uws_refused').length, uwsLoads ? 1 : 0);
});

if (uwsLoads) {
  test('its own digest in --uws-sha256: it loads', async () => {
    const digest = (await served()).health.engine_build!.sha256;
    const { health, events } = await served([WRONG, digest.toUpperCase()]);
    assert.is(health.engine, 'uws');
    assert.is(health.engine_build!.sha256, digest);
    // A build tried before it (another file) may be refused; the one that loads never is.
    for (const line of events('uws_refused')) assert.not.match(JSON.stringify(line.refused), digest);
  });
}

test.run();
