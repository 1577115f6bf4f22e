/**
 * The Redis Cluster hash slot of a key (0..16383): CRC16 (XMODEM) of the key,
 * or of its hash tag (the text between the first `{` and the next `}`, when
 * not empty), modulo 16384. The limiter's keys of one access key share a
 * hash tag (redis-function.ts), so one slot, so one primary.
 */
const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

export const SLOTS = 16384;

export function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key, 'utf8')) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc % SLOTS;
}
