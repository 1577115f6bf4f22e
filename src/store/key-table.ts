import { formatIPv6 } from '../core/ipv6.js';
import { isV6Key, keyIp, keyPort, keyType, packKey, type AddressTable } from './columns.js';

/**
 * The IPv6 addresses of the keys a log or a batch of the history keeps
 * (store/history.ts, store/versions.ts), so that its keys outlive the store
 * they came from: an IPv6 key is re-keyed to index this table instead of
 * the store's. Keys are added in ascending order, so each address is taken
 * once and the table ascends too.
 */
export class KeyTable {
  private readonly words: number[] = [];
  /** The source index of the last address taken. */
  private lastSource = -1;
  private lastTable: AddressTable | null = null;

  /** The key to keep for `key` of a store whose table is `source`: an IPv4 key as it is. */
  add(key: number, source: AddressTable): number {
    if (!isV6Key(key)) return key;
    const i = keyIp(key);
    if (i !== this.lastSource || source !== this.lastTable) {
      for (let w = 0; w < 4; w++) this.words.push(source[i * 4 + w]);
      this.lastSource = i;
      this.lastTable = source;
    }
    return packKey(this.words.length / 4 - 1, keyPort(key), keyType(key), true);
  }

  /** The table, in memory of its size that threads share. */
  table(): AddressTable {
    const t = new Uint32Array(new SharedArrayBuffer(this.words.length * 4));
    t.set(this.words);
    return t;
  }
}

/** An empty table, for logs and batches without IPv6 keys. */
export const NO_ADDRESSES: AddressTable = new Uint32Array(0);

/** The RFC 5952 text of address `i` of `table`. */
export function addressText(table: AddressTable, i: number): string {
  const groups: number[] = [];
  for (let w = 0; w < 4; w++) groups.push(table[i * 4 + w] >>> 16, table[i * 4 + w] & 0xffff);
  return formatIPv6(groups);
}
