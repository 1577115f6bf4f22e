/**
 * The usage of keys in one SharedArrayBuffer that every thread of the
 * process reads and writes (docs/threads.md, Limits across threads), so that
 * the limits are exact whichever thread a request lands on. Every operation
 * runs under one lock, held for the length of an admission (well under a
 * microsecond): a message to an owner thread would cost a round trip per
 * request, and hold it behind whatever that thread is doing.
 *
 * Layout, in 32-bit words: a header, then a hash table of keys (open
 * addressing, the 256-bit key id and where its record is), then the records,
 * in 64-bit words: each holds a key's day, count, the subnets seen and the
 * ring of its last accepted requests' times. A record that needs more room
 * (a limit raised) is moved to the top; the space left behind is taken back,
 * with removed keys, when the table is rebuilt in place under the lock.
 */

/** Header words. */
const LOCK = 0;
const TABLE_AT = 1;
const TABLE_CAP = 2;
const ENTRIES = 3;
/** Where the records begin and end, in 64-bit words. */
const ARENA_AT = 4;
const ARENA_TOP = 5;
/** 64-bit words of records left behind by a move. */
const WASTED = 6;
/** Bumped on every change of what a day's export holds: a thread that saves it sees others' changes. */
const CHANGES = 7;
/** Bumped whenever a record may have moved (a layout, a record moved for more room): a usage hint of another layout is not read. */
const LAYOUT = 8;
const HEADER_WORDS = 16;

/** A table entry: 8 words of key id, the record's place (0: empty). */
const ENTRY_WORDS = 10;
const ENTRY_RECORD = 8;

/** Record fields, in 64-bit words. */
export const R_DAY = 0;
export const R_COUNT = 1;
export const R_SUBNETS = 2;
export const R_NEXT = 3;
export const R_RING = 4;
const R_RING_CAP = 5;
const R_SUBNET_CAP = 6;
const R_FIELDS = 7;

const INITIAL_BYTES = 64 * 1024;
const INITIAL_CAPACITY = 1024;
/** The most entries a table of some capacity holds: open addressing with a probe to the next slot stays short below it. */
const MAX_LOAD = 0.75;
/**
 * The most the table may take: reserved as address space, taken from the
 * system only as it grows. Two million keys (the keys file's limit) with
 * the default limits take about 450 MB.
 */
export const SHARED_USAGE_MAX_BYTES = 2 ** 31;

export interface RecordRoom {
  ring: number;
  subnets: number;
}

/** A key's id (hex SHA-256) as 8 words, for ids read from a saved state. */
export function idWords(id: string): Int32Array {
  const bytes = Buffer.from(id, 'hex');
  const w = new Int32Array(8);
  for (let i = 0; i < 8; i++) w[i] = bytes.readInt32LE(i * 4);
  return w;
}

function hexOf(words: Int32Array, at: number): string {
  const bytes = Buffer.alloc(32);
  for (let i = 0; i < 8; i++) bytes.writeInt32LE(words[at + i], i * 4);
  return bytes.toString('hex');
}

export class SharedUsage {
  readonly buffer: SharedArrayBuffer;
  /**
   * Views of the whole buffer as this thread last saw it, made again when
   * any thread grew it: views that follow a growable buffer by themselves
   * are several times slower to read.
   */
  private i32: Int32Array;
  private f64: Float64Array;

  /** A new table, or this thread's view of one made elsewhere. */
  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(INITIAL_BYTES, { maxByteLength: SHARED_USAGE_MAX_BYTES });
    // Views that follow the buffer as any thread grows it.
    this.i32 = this.f64 = null!;
    this.refreshViews();
    if (!buffer) this.layOut(INITIAL_CAPACITY, new Int32Array(0), new Float64Array(0));
  }

  /** Keys with a record. */
  get entries(): number {
    return Atomics.load(this.i32, ENTRIES);
  }

  /** Changes of the counts so far, by every thread. */
  get changes(): number {
    return Atomics.load(this.i32, CHANGES);
  }

  /** Runs `fn` under the lock (no other thread reads or writes meanwhile). */
  locked<T>(fn: () => T): T {
    this.lock();
    try {
      return fn();
    } finally {
      this.unlock();
    }
  }

  private refreshViews(): void {
    this.i32 = new Int32Array(this.buffer, 0, this.buffer.byteLength / 4);
    this.f64 = new Float64Array(this.buffer, 0, this.buffer.byteLength / 8);
  }

  /** The 64-bit words of the table, under the lock: records are read and written through it, until the next `record` (which may grow the buffer). */
  get words(): Float64Array {
    return this.f64;
  }

  /** Where the record of the key whose id is the 8 words at `wa` of `w` is, or 0. Under the lock. */
  find(w: Int32Array, wa: number): number {
    const at = this.slotOf(w, wa);
    return this.i32[at + ENTRY_RECORD];
  }

  /**
   * Room in the table for `keys` keys without growing it while requests
   * come (a growth lays the whole table out again under the lock): made
   * when a keys file is loaded. Under the lock.
   */
  reserve(keys: number): void {
    let capacity = this.i32[TABLE_CAP];
    while (keys > capacity * MAX_LOAD) capacity *= 2;
    if (capacity !== this.i32[TABLE_CAP]) this.rebuild(capacity, null);
  }

  /**
   * Where the record of the key whose id is the 8 words at `wa` of `w` is,
   * with room for at least `room`: made (zeroed, day -1) or moved as
   * needed. A hint (two words at `hintAt` of `hints`: a record and the
   * layout it was found in) is where it is, without the table's slot and
   * the id read, while no record moved since; it is written with the place
   * found. Under the lock.
   */
  record(w: Int32Array, wa: number, room: RecordRoom, hints: Int32Array | null = null, hintAt = 0): number {
    if (hints !== null) {
      const hinted = hints[hintAt];
      if (hinted !== 0 && hints[hintAt + 1] === this.i32[LAYOUT] && this.f64[hinted + R_RING_CAP] >= room.ring && this.f64[hinted + R_SUBNET_CAP] >= room.subnets) return hinted;
      const r = this.placeRecord(w, wa, room);
      hints[hintAt] = r;
      hints[hintAt + 1] = this.i32[LAYOUT];
      return r;
    }
    return this.placeRecord(w, wa, room);
  }

  private placeRecord(w: Int32Array, wa: number, room: RecordRoom): number {
    let at = this.slotOf(w, wa);
    let r = this.i32[at + ENTRY_RECORD];
    if (r !== 0 && this.f64[r + R_RING_CAP] >= room.ring && this.f64[r + R_SUBNET_CAP] >= room.subnets) return r;
    if (r === 0 && this.i32[ENTRIES] + 1 > this.i32[TABLE_CAP] * MAX_LOAD) {
      this.rebuild(this.i32[TABLE_CAP] * 2, null);
      at = this.slotOf(w, wa);
    }
    const old = r;
    const ring = Math.max(room.ring, old ? this.f64[old + R_RING_CAP] : 0);
    const subnets = Math.max(room.subnets, old ? this.f64[old + R_SUBNET_CAP] : 0);
    r = this.allocate(R_FIELDS + subnets + ring);
    // The allocation may have rebuilt the table: the entry and the old record are looked up again.
    at = this.slotOf(w, wa);
    const from = this.i32[at + ENTRY_RECORD];
    const f = this.f64;
    f.fill(0, r, r + R_FIELDS + subnets + ring);
    f[r + R_DAY] = -1;
    f[r + R_RING_CAP] = ring;
    f[r + R_SUBNET_CAP] = subnets;
    if (from !== 0) {
      for (let i = 0; i < R_RING_CAP; i++) f[r + i] = f[from + i];
      f.copyWithin(r + R_FIELDS, from + R_FIELDS, from + R_FIELDS + f[from + R_SUBNETS]);
      f.copyWithin(this.ringAt(r), this.ringAt(from), this.ringAt(from) + f[from + R_RING]);
      this.i32[WASTED] += this.sizeOf(from);
      this.i32[LAYOUT]++;
    } else {
      for (let i = 0; i < 8; i++) this.i32[at + i] = w[wa + i];
      this.i32[ENTRIES]++;
    }
    this.i32[at + ENTRY_RECORD] = r;
    return r;
  }

  /** Where a record's ring of times begins. */
  ringAt(r: number): number {
    return r + R_FIELDS + this.f64[r + R_SUBNET_CAP];
  }

  /** How many subnets a record has room for. */
  subnetRoom(r: number): number {
    return this.f64[r + R_SUBNET_CAP];
  }

  /** Where a record's subnets begin. */
  subnetsAt(r: number): number {
    return r + R_FIELDS;
  }

  /** Counts a change of what a day's export holds. Under the lock. */
  changed(): void {
    Atomics.add(this.i32, CHANGES, 1);
  }

  /** Every key with a record: its hex id and the record. Under the lock. */
  *all(): Generator<[string, number]> {
    for (const at of this.filled()) yield [hexOf(this.i32, at), this.i32[at + ENTRY_RECORD]];
  }

  /** Drops the records `drop` says of, and takes back their room. Under the lock. */
  remove(drop: (r: number) => boolean): void {
    this.rebuild(this.i32[TABLE_CAP], drop);
  }

  /** The table's filled entries. */
  private *filled(): Generator<number> {
    const i32 = this.i32;
    const start = i32[TABLE_AT];
    const end = start + i32[TABLE_CAP] * ENTRY_WORDS;
    for (let at = start; at < end; at += ENTRY_WORDS) if (i32[at + ENTRY_RECORD] !== 0) yield at;
  }

  private sizeOf(r: number): number {
    return R_FIELDS + this.f64[r + R_SUBNET_CAP] + this.f64[r + R_RING_CAP];
  }

  /** The table slot of a key (its id the 8 words at `wa` of `w`): its own, or the empty one where it would go. */
  private slotOf(w: Int32Array, wa: number): number {
    const i32 = this.i32;
    const mask = i32[TABLE_CAP] - 1;
    const start = i32[TABLE_AT];
    const w0 = w[wa];
    // The id is a hash already: its first word spreads the keys.
    for (let i = w0 & mask; ; i = (i + 1) & mask) {
      const at = start + i * ENTRY_WORDS;
      if (i32[at + ENTRY_RECORD] === 0) return at;
      if (i32[at] === w0 && i32[at + 1] === w[wa + 1] && i32[at + 2] === w[wa + 2] && i32[at + 3] === w[wa + 3] && i32[at + 4] === w[wa + 4] && i32[at + 5] === w[wa + 5] && i32[at + 6] === w[wa + 6] && i32[at + 7] === w[wa + 7]) return at;
    }
  }

  /** `words` 64-bit words at the top of the records, the buffer grown (or the room left behind taken back) as needed. */
  private allocate(words: number): number {
    const i32 = this.i32;
    if ((i32[ARENA_TOP] + words) * 8 > this.buffer.byteLength) {
      if (i32[WASTED] * 2 > i32[ARENA_TOP] - i32[ARENA_AT]) this.rebuild(i32[TABLE_CAP], null);
      this.ensureBytes((i32[ARENA_TOP] + words) * 8);
    }
    const r = i32[ARENA_TOP];
    i32[ARENA_TOP] = r + words;
    return r;
  }

  private ensureBytes(bytes: number): void {
    if (bytes <= this.buffer.byteLength) return;
    const target = Math.min(SHARED_USAGE_MAX_BYTES, Math.max(bytes, this.buffer.byteLength * 2));
    if (bytes > target) throw new Error(`the usage table needs ${bytes} bytes, past its ${SHARED_USAGE_MAX_BYTES}`);
    this.buffer.grow(Math.ceil(target / 8) * 8);
    this.refreshViews();
  }

  /**
   * Lays the table out again in place, `capacity` entries, records packed
   * after it, those `drop` says of left out: the kept ids and records are
   * copied to two arrays first (one allocation each, whatever the number of keys).
   */
  private rebuild(capacity: number, drop: ((r: number) => boolean) | null): void {
    let keys = 0;
    let words = 0;
    for (const at of this.filled()) {
      const r = this.i32[at + ENTRY_RECORD];
      if (drop?.(r)) continue;
      keys++;
      words += this.sizeOf(r);
    }
    const ids = new Int32Array(keys * 8);
    const records = new Float64Array(words);
    let k = 0;
    let w = 0;
    for (const at of this.filled()) {
      const r = this.i32[at + ENTRY_RECORD];
      if (drop?.(r)) continue;
      ids.set(this.i32.subarray(at, at + 8), k * 8);
      records.set(this.f64.subarray(r, r + this.sizeOf(r)), w);
      k++;
      w += this.sizeOf(r);
    }
    this.layOut(capacity, ids, records);
  }

  private layOut(capacity: number, ids: Int32Array, records: Float64Array): void {
    const tableAt = HEADER_WORDS;
    const arenaAt = Math.ceil((tableAt + capacity * ENTRY_WORDS) / 2);
    const used = this.buffer.byteLength / 4;
    this.ensureBytes((arenaAt + records.length) * 8);
    const i32 = this.i32;
    // Memory the buffer grew by is zero already, and its pages are taken from the system only when first written.
    i32.fill(0, tableAt, Math.min(tableAt + capacity * ENTRY_WORDS, used));
    i32[TABLE_AT] = tableAt;
    i32[TABLE_CAP] = capacity;
    i32[LAYOUT]++;
    i32[ENTRIES] = 0;
    i32[ARENA_AT] = arenaAt;
    i32[ARENA_TOP] = arenaAt;
    i32[WASTED] = 0;
    this.f64.set(records, arenaAt);
    for (let k = 0, r = arenaAt; k < ids.length / 8; k++) {
      const at = this.slotOf(ids, k * 8);
      i32.set(ids.subarray(k * 8, k * 8 + 8), at);
      i32[at + ENTRY_RECORD] = r;
      i32[ENTRIES]++;
      r += this.sizeOf(r);
    }
    i32[ARENA_TOP] = arenaAt + records.length;
  }

  /** Takes the lock (a word that sleeps when taken: 0 free, 1 held, 2 held with others waiting); `locked` is the safe way. */
  lock(): void {
    const i32 = this.i32;
    let c = Atomics.compareExchange(i32, LOCK, 0, 1);
    for (let spin = 0; spin < 64 && c !== 0; spin++) c = Atomics.compareExchange(i32, LOCK, 0, 1);
    if (c !== 0) {
      if (c !== 2) c = Atomics.exchange(i32, LOCK, 2);
      while (c !== 0) {
        Atomics.wait(i32, LOCK, 2);
        c = Atomics.exchange(i32, LOCK, 2);
      }
    }
    // Another thread may have grown the buffer since this one last looked.
    if (this.buffer.byteLength !== this.i32.byteLength) this.refreshViews();
  }

  unlock(): void {
    if (Atomics.sub(this.i32, LOCK, 1) !== 1) {
      Atomics.store(this.i32, LOCK, 0);
      Atomics.notify(this.i32, LOCK, 1);
    }
  }
}
