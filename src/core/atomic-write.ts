import { closeSync, fsyncSync, openSync, renameSync, writeSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file the way readers expect a publisher to: a temporary file in the
 * same folder, flushed to disk, then renamed over the path in one step.
 */
export function writeFileAtomic(path: string, data: Uint8Array | string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w', 0o644);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
}
