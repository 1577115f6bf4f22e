import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execute } from '../../src/query/execute.js';
import { parsePlan } from '../../src/query/parse.js';
import { readQuery } from '../../src/query/query-string.js';
import { QueryScratch } from '../../src/query/scratch.js';
import { BodyWriter } from '../../src/render/envelope.js';
import { OutputBuffer } from '../../src/render/output-buffer.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { Store } from '../../src/store/store.js';
import { buildFromRecords } from '../helpers/build-store.js';
import { NaiveEngine } from '../reference/naive-engine.js';
import { TEST_NOW_S } from '../helpers/server.js';

/**
 * The compiled row writers, in process: every output shape (each field
 * alone, field sets, split_ip, pretty, format, the envelope, txt with and
 * without type, CSV) against the reference's bytes for the same records, and the length
 * each writer announces against the bytes it writes, for every cut of the rows.
 */
const records = generateRecords({ records: 400, seed: 111, now: TEST_NOW_S });
// Odd values: a city with quotes, a backslash and a control character; an empty English name; a very long ping.
records[0] = { ...records[0], city: { ru: 'Мос"к\\ва\u0001', en: '' }, ping_ms: 123456789.4, checked_at: TEST_NOW_S };
records[1] = { ...records[1], city: { ru: 'Москва,\r\nцентр', en: 'Moscow "centre"' }, org: 'A, "B"\nC', asn: 64500, hosting: true };
const { columns, meta } = buildFromRecords(records, undefined, TEST_NOW_S);
const store = new Store(columns, meta, { file: 'x', loadedAtMs: 0, generation: 1 });
const reference = new NaiveEngine({ proxies: records }, { asnDb: false });
const scratch = new QueryScratch();
const NOW_MS = TEST_NOW_S * 1000;

const FIELDS = ['ip', 'port', 'ip_out', 'type', 'anon', 'ping', 'timecheck', 'country', 'city', 'works', 'smtp', 'the service'];
const shapes: string[] = ['', 'type_prefix=1'];
for (const pretty of ['0', '1']) {
  for (const split of ['0', '1']) {
    for (const format of ['array', 'object']) {
      for (const wrap of ['0', '1']) {
        const base = `get=json&pretty=${pretty}&split_ip=${split}&format=${format}&wrap=${wrap}`;
        shapes.push(base, `${base}&lang=en`, ...FIELDS.map((f) => `${base}&fields=${encodeURIComponent(f)}`), `${base}&fields=city,ip,works`);
      }
    }
  }
}

// CSV: each field alone, and the sets, plain and split; the network fields; a city and organisation that need quotes.
for (const split of ['0', '1']) {
  const base = `get=csv&split_ip=${split}`;
  shapes.push(base, `${base}&lang=en`, ...[...FIELDS, 'asn', 'org', 'hosting', 'mobile'].map((f) => `${base}&fields=${encodeURIComponent(f)}`), `${base}&fields=city,ip,works,org,asn`);
}

const test = suite('row writers');

test(`${shapes.length} output shapes write the reference's bytes, and announce their length exactly`, () => {
  for (const q of shapes) {
    const parsed = parsePlan(readQuery(`${q}&time=99999`), meta.services);
    if (!parsed.ok) throw new Error(parsed.message);
    const plan = parsed.plan;
    const n = execute(store, plan, store.prefixEnd(TEST_NOW_S - plan.time), scratch);
    const rows = scratch.rows.slice(0, n);
    const writer = new BodyWriter(store, plan, rows, n, NOW_MS);
    const out = new OutputBuffer();
    writer.write(out, 0, n);
    const body = Buffer.from(out.view()).toString('utf8');
    const want = reference.answer(`key=x&${q}&time=99999`, NOW_MS).body;
    if (body !== want) assert.fixture(body, want, q);
    assert.is(out.pos, writer.frameLength() + writer.rowsLength(0, n), `total length of ?${q}`);
    // Any cut: the parts' lengths add up, and each part is what its length says.
    for (const [from, to] of [[0, 1], [1, 7], [7, n - 3], [n - 3, n]]) {
      if (!(from < to && to <= n)) continue;
      const part = new OutputBuffer();
      writer.write(part, from, to);
      const frame = (from === 0 || to === n) ? part.pos - writer.rowsLength(from, to) : 0;
      assert.ok(frame >= 0, `frame of [${from}, ${to}) of ?${q}`);
      if (from > 0 && to < n) assert.is(part.pos, writer.rowsLength(from, to), `rows [${from}, ${to}) of ?${q}`);
    }
  }
});

test.run();
