import * as assert from 'uvu/assert';
import { writeFileAtomic } from '../../src/core/atomic-write.js';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_NOW_S, eventually, type TestServer } from './server.js';

/** Version v (0..59) of a small snapshot: its generated_at is TEST_NOW_S + v, its records differ by seed. */
export const version = (v: number, records = 300): Uint8Array =>
  encodeSnapshot(generateRecords({ records, seed: 100 + v, now: TEST_NOW_S }), TEST_NOW_S + v);

export interface Health {
  status: string;
  snapshot: { generated_at: string; records: number; skipped: number; file: string };
  reloads: { ok: number; failed: number; last_error: string | null };
}

export const health = async (t: TestServer): Promise<Health> => (await (await t.get('/health')).json()) as Health;

/** The v of the version being served. */
export const servedVersion = async (t: TestServer): Promise<number> => {
  const iso = (await health(t)).snapshot.generated_at; // e.g. 2026-11-28T14:00:07+02:00
  return Number(iso.slice(17, 19));
};

/**
 * Publishes `bytes`, waits for their rejection, and checks that the reason
 * matches, that it is short, and that version `served` still answers the same bytes.
 */
export async function rejectedKeepsServing(t: TestServer, bytes: Uint8Array, reason: RegExp, served = 0): Promise<void> {
  const before = await (await t.api('count=20')).text();
  const failed = (await health(t)).reloads.failed;
  writeFileAtomic(t.snapshot, bytes);
  await eventually(async () => (await health(t)).reloads.failed === failed + 1, 10_000, `the rejection of ${reason}`);
  const h = await health(t);
  assert.match(h.reloads.last_error ?? '', reason);
  assert.ok((h.reloads.last_error ?? '').length < 300, `a short reason: ${(h.reloads.last_error ?? '').length} characters`);
  assert.is(h.status, 'ok');
  assert.is(await servedVersion(t), served);
  assert.is(await (await t.api('count=20')).text(), before);
}
