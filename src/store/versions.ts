import { sharedBuffer } from './arena.js';
import type { AddressTable, Network, StoreColumns, StoreMeta } from './columns.js';
import { KeyTable } from './key-table.js';

/**
 * Bytes a record version takes: its key (8), print (8), the snapshot it
 * was first seen at (4), checked_at (4), ping (8: the contract bounds it only
 * below), services (4), city (4), network (4), country (2), anon (1), works
 * (1) and the network's flags (1).
 */
export const VERSION_BYTES = 49;
/** A batch under this size is copied out of the room it was written in. */
const SMALL_BATCH_BYTES = 1024 * 1024;

/**
 * The versions of records that a snapshot replaced or dropped, as they were
 * in the snapshot before it: what a change set needs to tell whether a key
 * was in the list of a cursor's moment (docs/design.md, Exact change sets).
 * Version i was the record of `key[i]` from snapshot `from[i]` until this
 * batch's `seq`, exclusive. Keys ascend, like the address order they were
 * read along. Countries and cities are ids of the replaced store's
 * dictionaries, which the batch keeps (plain strings: no column of that
 * store is kept alive).
 */
export interface VersionBatch {
  /** The snapshot that replaced these versions. */
  seq: number;
  /** When that snapshot was swapped in. */
  loadedAtMs: number;
  count: number;
  key: Float64Array;
  /** Two 32-bit halves per version, as `addrPrint`. */
  print: Uint32Array;
  from: Uint32Array;
  checkedAt: Uint32Array;
  /** Whole milliseconds. */
  ping: Float64Array;
  services: Uint32Array;
  city: Uint32Array;
  network: Uint32Array;
  country: Uint16Array;
  anon: Uint8Array;
  works: Uint8Array;
  netFlags: Uint8Array;
  countries: readonly string[];
  cities: ReadonlyArray<{ ru: string; en: string }>;
  networks: readonly Network[];
  /** The addresses its IPv6 keys index (store/key-table.ts). */
  v6: AddressTable;
}

/** Columns of `n` versions carved from `buffer`, widest first, so each view is aligned. */
function carve(buffer: SharedArrayBuffer, n: number): Pick<VersionBatch, 'key' | 'print' | 'from' | 'checkedAt' | 'ping' | 'services' | 'city' | 'network' | 'country' | 'anon' | 'works' | 'netFlags'> {
  let at = 0;
  const take = <T>(make: (b: SharedArrayBuffer, at: number, n: number) => T, width: number, items: number): T => {
    const view = make(buffer, at, items);
    at += width * items;
    return view;
  };
  return {
    key: take((b, a, k) => new Float64Array(b, a, k), 8, n),
    ping: take((b, a, k) => new Float64Array(b, a, k), 8, n),
    print: take((b, a, k) => new Uint32Array(b, a, k), 4, n * 2),
    from: take((b, a, k) => new Uint32Array(b, a, k), 4, n),
    checkedAt: take((b, a, k) => new Uint32Array(b, a, k), 4, n),
    services: take((b, a, k) => new Uint32Array(b, a, k), 4, n),
    city: take((b, a, k) => new Uint32Array(b, a, k), 4, n),
    network: take((b, a, k) => new Uint32Array(b, a, k), 4, n),
    country: take((b, a, k) => new Uint16Array(b, a, k), 2, n),
    anon: take((b, a, k) => new Uint8Array(b, a, k), 1, n),
    works: take((b, a, k) => new Uint8Array(b, a, k), 1, n),
    netFlags: take((b, a, k) => new Uint8Array(b, a, k), 1, n),
  };
}

/**
 * Writes the versions a merge replaces, up to every row of the store
 * before: its room is mapped by itself, so the pages never written cost
 * nothing, and `finish` copies what was written into a buffer of its size.
 */
export class VersionWriter {
  private readonly cols: ReturnType<typeof carve>;
  private readonly keys = new KeyTable();
  count = 0;

  constructor(private readonly prev: StoreColumns, private readonly prevMeta: StoreMeta, private readonly seq: number, private readonly loadedAtMs: number) {
    this.cols = carve(sharedBuffer(Math.max(1, prev.rows) * VERSION_BYTES), Math.max(1, prev.rows));
  }

  /** Keeps the record of the store before's row `r` (its key `key`, at `pos` of its address order), the same since snapshot `from`; in address order. */
  add(r: number, key: number, pos: number, from: number): void {
    const p = this.prev;
    const c = this.cols;
    const i = this.count++;
    c.key[i] = this.keys.add(key, p.v6Entries);
    c.print[i * 2] = p.addrPrint[pos * 2];
    c.print[i * 2 + 1] = p.addrPrint[pos * 2 + 1];
    c.from[i] = from;
    c.checkedAt[i] = p.times[p.timeRank[r]];
    c.ping[i] = p.pingValues[p.pingRank[r]];
    c.services[i] = p.services[r];
    c.city[i] = p.city[r];
    c.country[i] = p.country[r];
    c.anon[i] = p.anon[r];
    c.works[i] = p.works[r];
    c.network[i] = p.network[r];
    c.netFlags[i] = p.netFlags[r];
  }

  /**
   * The batch. A small one is copied into a buffer of its size (the room
   * goes at the next collection); a large one keeps the room, of which only
   * the pages written cost memory: copying it would stall the event loop.
   */
  finish(): VersionBatch {
    const n = this.count;
    const meta = { seq: this.seq, loadedAtMs: this.loadedAtMs, count: n, countries: this.prevMeta.countries, cities: this.prevMeta.cities, networks: this.prevMeta.networks, v6: this.keys.table() };
    if (n * VERSION_BYTES >= SMALL_BATCH_BYTES) return { ...meta, ...this.cols };
    const out = carve(new SharedArrayBuffer(n * VERSION_BYTES), n);
    for (const name of Object.keys(out) as Array<keyof typeof out>) {
      const width = name === 'print' ? 2 : 1;
      (out[name] as Uint32Array).set((this.cols[name] as Uint32Array).subarray(0, n * width));
    }
    return { ...meta, ...out };
  }
}

