import { createHash } from 'node:crypto';
import { CONTENT_CHARS } from '../store/history.js';
import type { Store } from '../store/store.js';
import { networkFilters, type Plan } from './plan.js';

/**
 * A cursor (docs/api.md, Keeping a list): the snapshot (its generated_at and
 * the start of its content hash), the second of the answer, and a hash of the
 * selection. Written `<generated_at>.<second>.<content>.<selection>`, the
 * numbers in base 36: nothing in it depends on the process, so instances
 * that loaded the same snapshot give the same cursor at the same second.
 */
export interface Cursor {
  text: string;
  generatedAt: number;
  second: number;
  content: string;
  selection: string;
}

const SELECTION_CHARS = 10;
const CURSOR = new RegExp(`^([0-9a-z]{1,11})\\.([0-9a-z]{1,11})\\.([0-9A-Za-z_-]{${CONTENT_CHARS}})\\.([0-9A-Za-z_-]{${SELECTION_CHARS}})$`);

const tags = new WeakMap<Plan, string>();

/**
 * The hash of what a plan selects: the filters, each list as a set (the
 * order of its items changes nothing), and nothing of the output.
 */
export function selectionTag(p: Plan): string {
  let tag = tags.get(p);
  if (tag !== undefined) return tag;
  const sorted = <T>(items: readonly T[] | null): T[] | null => items && [...items].sort();
  const selection = [
    sorted(p.types), sorted(p.anons), sorted(p.ports), p.ping, p.time, p.works, sorted(p.countries), p.countries ? p.countryMode : '',
    sorted(p.cities?.map((c) => c.trim().normalize('NFC').toLowerCase()) ?? null), sorted(p.services?.map((s) => s.toLowerCase()) ?? null), sorted(p.ips?.map((i) => i.text) ?? null),
    // Only when given: the cursors of selections without it stay what they were before it existed.
    ...(p.ipv ? [sorted(p.ipv)] : []),
    ...(networkFilters(p) ? [[sorted(p.asns), p.hosting, p.mobile]] : []),
  ];
  tag = createHash('sha256').update(JSON.stringify(selection)).digest('base64url').slice(0, SELECTION_CHARS);
  tags.set(p, tag);
  return tag;
}

/** The cursor of an answer to `plan` from `store` at second `nowS`. */
export function cursorOf(store: Store, plan: Plan, nowS: number): string {
  return `${store.meta.generatedAt.toString(36)}.${nowS.toString(36)}.${store.meta.contentHash.slice(0, CONTENT_CHARS)}.${selectionTag(plan)}`;
}

/** A cursor read back, or null when `text` is not one. */
export function parseCursor(text: string): Cursor | null {
  const m = CURSOR.exec(text);
  if (!m) return null;
  const generatedAt = parseInt(m[1], 36);
  const second = parseInt(m[2], 36);
  if (!Number.isSafeInteger(generatedAt) || !Number.isSafeInteger(second)) return null;
  return { text, generatedAt, second, content: m[3], selection: m[4] };
}

/**
 * Seconds a cursor may name past this instance's now: instances behind one
 * balancer read clocks that agree to well under a second, but may sit on
 * either side of a second's turn.
 */
const CLOCK_SLACK_S = 1;

/**
 * Why no instance can have issued `c` by second `nowS`, or null: a cursor
 * names the second of its answer, never after now. (A second before its
 * snapshot's generated_at is no sign of forgery: the checker's clock may run
 * ahead of the instances'.)
 */
export function forgedCursor(c: Cursor, nowS: number): string | null {
  return c.second > nowS + CLOCK_SLACK_S ? 'it names a second after now' : null;
}

/** Whether answers to `plan` carry a cursor: full lists, without count, offset or a random order. */
export const carriesCursor = (p: Plan): boolean => p.get !== 'stats' && p.count === null && p.offset === null && p.sort !== 'random';
