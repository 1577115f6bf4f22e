import { TYPES } from '../core/vocabulary.js';
import { compareAddresses, compareKeys, isV6Key, keyIp, keyPort, keyType, type AddressTable } from '../store/columns.js';
import { addressText } from '../store/key-table.js';
import type { Store } from '../store/store.js';
import { execute } from './execute.js';
import type { Plan } from './plan.js';
import type { QueryScratch } from './scratch.js';
import { versionFilter, type Then } from './version-filter.js';

/**
 * A change set (docs/api.md, Keeping a list): the upserts are
 * `scratch.rows[0..n)` in row order, the removes are keys, sorted.
 */
export interface ChangeSet {
  reset: boolean;
  n: number;
  removes: string[];
}

const NO_REMOVES: string[] = [];

/**
 * Where the change set of `plan` starts in the store's history, or -1 when
 * it is a reset: the store no longer knows the cursor's snapshot, or more
 * keys left since then than the store has records (the whole list is then
 * the smaller answer, and the removes stay bounded by the store's size).
 */
export function changesStart(store: Store, plan: Plan): number {
  const history = store.history;
  const at = plan.since === null ? -1 : history.indexOf(plan.since.generatedAt, plan.since.content);
  if (at < 0) return -1;
  let left = 0;
  for (let i = at + 1; i < history.snapshots.length; i++) left += history.snapshots[i].left.length;
  return left > store.rows ? -1 : at;
}

/** The text of a key in a change set: `type://ip:port`, an IPv6 address (address `ip` of `table`) bracketed. */
function keyText(type: number, ip: number, port: number, table: AddressTable | null = null): string {
  const address = table === null ? `${ip >>> 24}.${(ip >>> 16) & 255}.${(ip >>> 8) & 255}.${ip & 255}` : `[${addressText(table, ip)}]`;
  return `${TYPES[type]}://${address}:${port}`;
}

/** Per value, the rank of its text (followed by `after`) among all the values' texts in string order; and per rank, the value. */
function textRanks(values: number, after: string): { rank: Uint32Array; value: Uint32Array } {
  const texts = Array.from({ length: values }, (_, v) => `${v}${after}`);
  const value = Uint32Array.from({ length: values }, (_, v) => v).sort((a, b) => (texts[a] < texts[b] ? -1 : 1));
  const rank = new Uint32Array(values);
  value.forEach((v, r) => (rank[v] = r));
  return { rank, value };
}

type Ranks = ReturnType<typeof textRanks>;
/** Made at the first change set: sorting the 65,536 port texts takes a few tens of milliseconds. */
let textOrder: { dotted: Ranks; last: Ranks; port: Ranks } | null = null;

/**
 * A number that orders keys as their texts order (removes are sorted as
 * strings): the type (its names sort in code order), then each of the first
 * three octets by the rank of its text before a dot, the last before the
 * colon, and the port by its text's rank: 2 + 4 × 8 + 16 bits. Numbers sort
 * far faster than the strings they stand for.
 */
export function textOrderKey(type: number, ip: number, port: number): number {
  const t = (textOrder ??= { dotted: textRanks(256, '.'), last: textRanks(256, ':'), port: textRanks(65536, '') });
  const d = t.dotted.rank;
  const octets = ((d[ip >>> 24] << 24) | (d[(ip >>> 16) & 255] << 16) | (d[(ip >>> 8) & 255] << 8) | t.last.rank[ip & 255]) >>> 0;
  return (type * 4294967296 + octets) * 65536 + t.port.rank[port];
}

/** The key's text back from its text-order number. */
function textOfOrderKey(key: number): string {
  const t = textOrder!;
  const d = t.dotted.value;
  const port = t.port.value[key % 65536];
  const rest = Math.floor(key / 65536);
  const o = rest % 4294967296;
  const ip = ((d[o >>> 24] << 24) | (d[(o >>> 16) & 255] << 16) | (d[(o >>> 8) & 255] << 8) | t.last.value[o & 255]) >>> 0;
  return keyText(Math.floor(rest / 4294967296), ip, port);
}

/**
 * The change set of `plan` (which has a cursor) from the cursor's list to
 * the list of `store` at second `nowS` (docs/api.md, Keeping a list).
 *
 * A row whose `changedAt` is at most the cursor's snapshot has had the same
 * record since then, so it matches the filters exactly as it did, and was
 * in the cursor's list exactly when it was in the cursor's window. With
 * W(t) the window at second t, such a row of the selection is an upsert
 * when it is in W(now) and was not in W(cursor), and a remove the other way
 * round.
 *
 * Every other key changed or left since: whether it was in the cursor's
 * list is read from the version it had then (store/versions.ts). It is a
 * remove when that version was listed and the key is not now, and an
 * upsert when it is listed now, unless the version listed then was the
 * same record. When the versions no longer reach back to the cursor, every
 * key changed or left that the filters of the key itself (type, port, ip)
 * let through is taken as listed then: a wider change set, which is a reset
 * where it would be larger than the whole list.
 */
export function computeChanges(store: Store, plan: Plan, nowS: number, scratch: QueryScratch): ChangeSet {
  scratch.fit(store);
  const since = plan.since!;
  const history = store.history;
  const at = changesStart(store, plan);
  const list = { ...plan, sort: null, offset: null, count: null, format: 'array' as const };
  const endNow = store.prefixEnd(nowS - plan.time);
  if (at < 0) return whole(store, list, endNow, scratch);

  const seq = history.snapshots[at].seq;
  const exact = history.exactFrom(at);
  const changedAt = history.changedAt;
  const endThen = store.prefixEnd(since.second - plan.time);
  const end = Math.max(endNow, endThen);
  const m = execute(store, list, end, scratch);
  const rows = scratch.rows;
  // When every row of the window matched (no filter but time), the rows that did not are those past it: no marks needed.
  const marks = m === end ? null : scratch.marks.fill(0, 0, store.words);
  if (marks) for (let i = 0; i < m; i++) marks[rows[i] >>> 5] |= 1 << (rows[i] & 31);
  const listedNow = (r: number): boolean => r >= 0 && r < endNow && (marks === null || (marks[r >>> 5] & (1 << (r & 31))) !== 0);
  const { ip, port, type, addrPrint: prints, v6Entries } = store.c;
  const removed = new Removes();
  const keyPasses = keyFilter(plan);
  const v6Rows = store.ipvSets[1];
  /** The address table of row r's ip: null for an IPv4 row. */
  const tableOf = (r: number): AddressTable | null => ((v6Rows[r >>> 5] & (1 << (r & 31))) !== 0 ? v6Entries : null);

  // Changed rows listed now, and then as the same record: not upserts.
  const same = exact ? scratch.same.fill(0, 0, store.words) : null;
  if (exact) {
    const then: Then = { plan, store, seq, minCheckedAt: since.second - plan.time, keyPasses };
    for (let b = history.versions.length - 1; b >= 0 && history.versions[b].seq > seq; b--) {
      const batch = history.versions[b];
      const listedThen = versionFilter(then, batch);
      // A batch's keys ascend, as byAddress does: each is sought from where the one before was.
      let from = 0;
      for (let v = 0; v < batch.count; v++) {
        if (!listedThen(v)) continue;
        const key = batch.key[v];
        from = seek(store, key, batch.v6, from);
        const pos = from < store.rows && compareKeys(store.c.addrKey[from], v6Entries, key, batch.v6) === 0 ? from : -1;
        const r = pos < 0 ? -1 : store.c.byAddress[pos];
        if (!listedNow(r)) removed.addKey(key, batch.v6);
        else if (prints[pos * 2] === batch.print[v * 2] && prints[pos * 2 + 1] === batch.print[v * 2 + 1]) same![r >>> 5] |= 1 << (r & 31);
      }
    }
  }

  let n = 0;
  let listed = 0;
  for (let i = 0; i < m; i++) {
    const r = rows[i];
    const changed = changedAt[r] > seq;
    if (r < endNow) {
      listed++;
      if (changed ? same === null || (same[r >>> 5] & (1 << (r & 31))) === 0 : r >= endThen) rows[n++] = r;
    } else if (changed ? same === null : r < endThen) removed.add(type[r], ip[r], port[r], tableOf(r));
  }
  if (exact) return { reset: false, n, removes: removed.sorted() };

  // Wider: every other changed row the key's own filters let through, and every key that left since the cursor's snapshot and is not back.
  for (let r = marks ? 0 : end; r < store.rows; r++) {
    if (changedAt[r] > seq && (marks === null || (marks[r >>> 5] & (1 << (r & 31))) === 0) && keyPasses(type[r], ip[r], port[r], tableOf(r))) removed.add(type[r], ip[r], port[r], tableOf(r));
  }
  for (let i = at + 1; i < history.snapshots.length; i++) {
    const { left, leftV6 } = history.snapshots[i];
    for (const key of left) {
      if (keyPasses(keyType(key), keyIp(key), keyPort(key), isV6Key(key) ? leftV6 : null) && rowOf(store, key, leftV6) < 0) removed.addKey(key, leftV6);
    }
  }
  const removes = removed.sorted();
  return n + removes.length > listed ? whole(store, list, endNow, scratch) : { reset: false, n, removes };
}

/** A reset: the whole list of now. */
function whole(store: Store, list: Plan, endNow: number, scratch: QueryScratch): ChangeSet {
  return { reset: true, n: execute(store, list, endNow, scratch), removes: NO_REMOVES };
}

/**
 * The keys a change set removes, as texts sorted as strings, each once (a
 * key may have left more than once): IPv4 keys by their text-order numbers,
 * which sort far faster than strings, IPv6 keys by their texts.
 */
class Removes {
  private readonly v4: number[] = [];
  private readonly v6: string[] = [];

  /** The key of a row, or of a log: `ip` an IPv4 address, or the index of an IPv6 one in `table`. */
  add(type: number, ip: number, port: number, table: AddressTable | null): void {
    if (table === null) this.v4.push(textOrderKey(type, ip, port));
    else this.v6.push(keyText(type, ip, port, table));
  }

  /** A key (see packKey) whose IPv6 address is in `table`. */
  addKey(key: number, table: AddressTable): void {
    this.add(keyType(key), keyIp(key), keyPort(key), isV6Key(key) ? table : null);
  }

  sorted(): string[] {
    const numbers = Float64Array.from(this.v4).sort();
    const v4: string[] = [];
    for (let i = 0; i < numbers.length; i++) if (i === 0 || numbers[i] !== numbers[i - 1]) v4.push(textOfOrderKey(numbers[i]));
    if (this.v6.length === 0) return v4;
    const v6 = [...new Set(this.v6)].sort();
    const texts: string[] = [];
    let i = 0;
    let j = 0;
    while (i < v4.length || j < v6.length) texts.push(j >= v6.length || (i < v4.length && v4[i] < v6[j]) ? v4[i++] : v6[j++]);
    return texts;
  }
}

/** Whether a key passes the filters of the key itself: `ip` an IPv4 address, or the index of an IPv6 one in `table`. */
export type KeyPasses = (type: number, ip: number, port: number, table: AddressTable | null) => boolean;

/** The filters of a key itself: its type, its port, its family, and (JSON) its address. */
export function keyFilter(plan: Plan): KeyPasses {
  const types = plan.types;
  const ports = plan.portSet;
  const ips = plan.ips;
  const ipv = plan.ipv;
  return (type, ip, port, table) =>
    (types === null || types.includes(type)) && (ports === null || ports.has(port)) &&
    (ipv === null || ipv.includes(table === null ? 4 : 6)) &&
    (ips === null || ips.some((item) =>
      (table === null ? item.v6 === null && item.ip === ip : item.v6 !== null && compareAddresses(table, ip, item.v6, 0) === 0) && (item.port < 0 || item.port === port)));
}

/**
 * The first position at or after `from` of byAddress whose key is not below
 * `key` (an IPv6 one indexing `table`): a gallop, then a binary search.
 */
function seek(store: Store, key: number, table: AddressTable, from: number): number {
  const n = store.rows;
  const keys = store.c.addrKey;
  const own = store.c.v6Entries;
  const below = (pos: number): boolean => compareKeys(keys[pos], own, key, table) < 0;
  let lo = from;
  let hi = from;
  let step = 1;
  while (hi < n && below(hi)) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  if (hi > n) hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The row of a key (an IPv6 one indexing `table`) in `store`, or -1: byAddress is ordered by ip, port, type. */
function rowOf(store: Store, key: number, table: AddressTable): number {
  const pos = seek(store, key, table, 0);
  return pos < store.rows && compareKeys(store.c.addrKey[pos], store.c.v6Entries, key, table) === 0 ? store.c.byAddress[pos] : -1;
}

/** Whether a change set changes nothing. */
export const isEmpty = (c: ChangeSet): boolean => !c.reset && c.n === 0 && c.removes.length === 0;
