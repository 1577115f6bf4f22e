import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BodyMemory } from '../../src/bodies/body-memory.js';
import type { Body, Source } from '../../src/bodies/body.js';
import { CHUNK_BYTES, Production, type Keeper, type ProductionOwner } from '../../src/bodies/production.js';
import { execute } from '../../src/query/execute.js';
import { parsePlan } from '../../src/query/parse.js';
import { readQuery } from '../../src/query/query-string.js';
import { QueryScratch } from '../../src/query/scratch.js';
import { BodyWriter } from '../../src/render/envelope.js';
import { OutputBuffer } from '../../src/render/output-buffer.js';
import { generateRecords } from '../../src/snapshot/generate.js';
import { Store } from '../../src/store/store.js';
import { buildFromRecords } from '../helpers/build-store.js';
import { TEST_NOW_S } from '../helpers/server.js';

/**
 * A production (bodies/production.ts) against the real body memory: what
 * every reader gets is the body written in one go, and every byte it took
 * from the budget goes back, whichever way it was kept.
 */
const records = generateRecords({ records: 6000, seed: 11, now: TEST_NOW_S });
const { columns, meta } = buildFromRecords(records, undefined, TEST_NOW_S);
const store = new Store(columns, meta, { file: 'x', loadedAtMs: 0, generation: 1 });

function writerFor(query: string): BodyWriter {
  const parsed = parsePlan(readQuery(query), meta.services);
  if (!parsed.ok) throw new Error(parsed.message);
  const scratch = new QueryScratch();
  const n = execute(store, parsed.plan, store.prefixEnd(0), scratch);
  return new BodyWriter(store, parsed.plan, scratch.rows.slice(0, n), n, TEST_NOW_S * 1000);
}

/** The body as one write of the whole writer gives it. */
function expected(writer: BodyWriter, k = writer.n): string {
  const out = new OutputBuffer();
  if (k === writer.n) writer.write(out, 0, k);
  else new BodyWriter(store, writer.plan, writer.rows.subarray(0, k), k, TEST_NOW_S * 1000).write(out, 0, k);
  return Buffer.from(out.view()).toString();
}

class Owner implements ProductionOwner {
  readonly out = new OutputBuffer();
  retiredCount = 0;
  rowsBack = 0;
  constructor(readonly memory: BodyMemory) {}
  retired(): void {
    this.retiredCount++;
  }
  giveBackRows(): void {
    this.rowsBack++;
  }
}

const ready = (s: Source): Promise<boolean> => new Promise((resolve) => s.whenReady(resolve));

/** Reads a body to its end, `each` called after every piece; the text. */
function readAll(body: Body, each: (i: number) => void = () => undefined): string {
  const parts: Buffer[] = [];
  for (let i = 0; ; i++) {
    const piece = body.piece(i);
    if (!piece) break;
    parts.push(Buffer.from(piece)); // copied: a ring's chunk is reused once dropped
    each(i);
  }
  return Buffer.concat(parts).toString();
}

/** A production of the query's body with room for it in the budget, its length known. */
async function produced(query: string) {
  const memory = new BodyMemory(64 << 20, CHUNK_BYTES + 65536, 4);
  const owner = new Owner(memory);
  const w = writerFor(query);
  const rowsBytes = w.rows.buffer.byteLength + w.frameBytes;
  const p = new Production('k', w, owner, null, false);
  assert.ok(await ready(p));
  return { memory, owner, w, rowsBytes, p };
}

const BIG = 'get=json&pretty=1&fields=ip,port,ip_out,type,anon,ping,timecheck,country,city,works,smtp,telegram,avito,google';

test('the body is large enough for many chunks', () => {
  const w = writerFor(BIG);
  assert.ok(w.n * w.rowBound > 4 * CHUNK_BYTES, 'otherwise the tests below prove nothing about chunks');
});

test('kept whole: readers that join at any point read the same bytes, one buffer from the budget; it all goes back when the last leaves', async () => {
  const { memory, owner, w, rowsBytes, p } = await produced(BIG);
  const want = expected(w);
  assert.is(p.total, Buffer.byteLength(want));
  assert.is(memory.budget.used, rowsBytes + p.total, 'the rows and the whole buffer');
  const first = p.open();
  let second: Body | null = null;
  let late = '';
  const got = readAll(first, (i) => {
    if (i === 0) second = p.open();
    if (i === 1) late = readAll(second!);
  });
  assert.is(got, want);
  assert.is(late, want, 'a reader that joined after the first chunk');
  assert.is(memory.budget.used, rowsBytes + p.total, 'nothing more for the second reader');
  first.release();
  assert.is(owner.retiredCount, 0, 'a reader is left');
  second!.release();
  assert.is(owner.retiredCount, 1);
  assert.is(owner.rowsBack, 1);
  assert.is(memory.budget.used, p.total, 'only the spare buffer is left, kept for the next body');
  const next = memory.claim(p.total)!;
  assert.is(memory.budget.used, p.total, 'the spare is the next claim');
  memory.unclaim(next, false);
  assert.is(memory.budget.used, 0);
});

test('past the budget: never held whole, a ring of chunks kept only while the budget has room, the same bytes, all of it back at the end', async () => {
  const w = writerFor(BIG);
  const rowsBytes = w.rows.buffer.byteLength + w.frameBytes;
  // Room for the rows and three chunks of the ring, not for the body.
  const memory = new BodyMemory(rowsBytes + 3 * (CHUNK_BYTES + 65536), CHUNK_BYTES + 65536, 4);
  const owner = new Owner(memory);
  const p = new Production('k', w, owner, null, false);
  assert.ok(await ready(p));
  assert.ok(p.total > memory.budget.limit, 'the body does not fit');
  const readers = [p.open(), p.open()];
  let peak = 0;
  const texts = readers.map((r) => readAll(r, () => (peak = Math.max(peak, memory.budget.used))));
  assert.is(texts[0], expected(w));
  assert.is(texts[1], texts[0], 'a reader far behind renders again what the ring let go');
  assert.ok(peak <= memory.budget.limit, `the budget held: ${peak} of ${memory.budget.limit}`);
  assert.ok(memory.budget.refusals > 0, 'the ring was refused room');
  for (const r of readers) r.release();
  assert.is(memory.budget.used, 0);
  assert.is(owner.rowsBack, 1);
});

test('readers that all stop reading give the whole body back; resumed, they read on from a ring, the bytes unchanged', async () => {
  const { memory, w, rowsBytes, p } = await produced(BIG);
  const a = p.open();
  const b = p.open();
  const partsA = [Buffer.from(a.piece(0)!)];
  const partsB = [Buffer.from(b.piece(0)!)];
  assert.ok(a.park!() && b.park!());
  // The whole buffer is the spare now: a claim of its size gets it without taking more.
  const claimed = memory.claim(p.total)!;
  assert.is(memory.budget.used, rowsBytes + p.total);
  memory.unclaim(claimed, false);
  assert.is(memory.budget.used, rowsBytes, 'nothing but the rows while every reader is parked');
  // A parked reader hands out again the piece it gave back, then the rest.
  for (const [r, parts] of [[a, partsA], [b, partsB]] as const) {
    parts.pop();
    for (let i = 0; ; i++) {
      const piece = r.piece(i);
      if (!piece) break;
      parts.push(Buffer.from(piece));
    }
  }
  assert.is(Buffer.concat(partsA).toString(), expected(w));
  assert.is(Buffer.concat(partsB).toString(), expected(w));
  a.release();
  b.release();
  assert.is(memory.budget.used, 0);
});

test('a body the keeper takes is counted by the keeper from then on; its readers read on, and the rows are not given back twice', async () => {
  const memory = new BodyMemory(64 << 20, CHUNK_BYTES + 65536, 4);
  const owner = new Owner(memory);
  const w = writerFor('get=json&pretty=0');
  const kept: { bytes?: Uint8Array; ends?: Uint32Array | null } = {};
  const keeper: Keeper = {
    fits: () => true,
    keep(bytes, _rows, ends) {
      kept.bytes = bytes;
      kept.ends = ends;
      return { bytes: true, rows: true };
    },
  };
  const p = new Production('k', w, owner, keeper, true);
  assert.ok(await ready(p));
  const r = p.open();
  const text = readAll(r);
  assert.is(text, expected(w));
  assert.ok(kept.bytes, 'kept once complete');
  assert.is(Buffer.from(kept.bytes!).toString(), text);
  // Bare JSON: where each record ends, so the keeper can cut the body after any of them.
  const k = w.n >> 1;
  assert.is(Buffer.from(kept.bytes!.subarray(0, kept.ends![k - 1])).toString() + ']', expected(w, k));
  assert.is(memory.budget.used, 0, 'neither the buffer nor the rows are counted here');
  r.release();
  assert.is(owner.rowsBack, 0, 'the rows are the keeper\'s');
  assert.is(memory.budget.used, 0);
});

test('narrowed: the first k rows of the body, then the close', async () => {
  const memory = new BodyMemory(64 << 20, CHUNK_BYTES + 65536, 4);
  const owner = new Owner(memory);
  const w = writerFor('get=json&pretty=1');
  const p = new Production('k', w, owner, null, true);
  const k = Math.floor(w.n * 0.7);
  const narrow = p.narrowed(k, w.closeBytes());
  assert.ok(await ready(narrow));
  const body = narrow.open();
  const text = readAll(body);
  assert.is(text, expected(w, k));
  assert.is(body.total, Buffer.byteLength(text));
  body.release();
  assert.is(owner.retiredCount, 1);
  assert.is(memory.budget.used, p.total, 'the spare only');
});

test.run();
