import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OutputBuffer } from '../../src/render/output-buffer.js';

const test = suite('output buffer');
const MB = 1024 * 1024;

/** Writes `bytes` bytes of `fill` at the current position. */
function write(out: OutputBuffer, bytes: number, fill: number): Uint8Array {
  const buf = out.reserve(bytes);
  buf.fill(fill, out.pos, out.pos + bytes);
  out.pos += bytes;
  return out.view();
}

test('bytes lent to a response stay as written while later bodies are rendered', () => {
  const out = new OutputBuffer();
  const body = write(out, 3 * MB, 7);
  out.lend();
  for (let i = 0; i < 3; i++) {
    out.reset();
    write(out, 3 * MB, 9);
  }
  assert.ok(body.every((b) => b === 7));
});

test('a buffer given back is grown into by the next large body, which keeps what was written before it', () => {
  const out = new OutputBuffer();
  write(out, 3 * MB, 1);
  const lent = out.lend();
  out.giveBack(lent);
  out.reset();
  write(out, 100, 2);
  const body = write(out, 2 * MB, 3);
  assert.is(out.buf, lent, 'the given-back buffer, not a new one');
  assert.is(body.length, 100 + 2 * MB);
  assert.ok(body.subarray(0, 100).every((b) => b === 2));
  assert.ok(body.subarray(100).every((b) => b === 3));
});

test('a spare too small for a body is not used for it, and the smallest that fits is', () => {
  const out = new OutputBuffer();
  const sizes = [1, 6, 3].map((mb) => {
    out.reset();
    write(out, mb * MB, 0);
    return out.lend();
  });
  for (const b of sizes) out.giveBack(b);
  out.reset();
  write(out, 2 * MB, 0);
  assert.is(out.buf, sizes[2], 'the 3 MB spare for 2 MB');
  const small = out.lend();
  write(out, 5 * MB, 0);
  assert.is(out.buf, sizes[1], 'the 6 MB spare for 5 MB');
  out.giveBack(small);
});

test('spares are kept up to a bound: many large buffers given back are not all held', () => {
  const out = new OutputBuffer();
  // Reserved, not written: untouched pages cost no memory.
  const grow = (bytes: number): void => {
    out.reserve(bytes);
    out.pos += bytes;
  };
  const lent: Uint8Array[] = [];
  for (let i = 0; i < 20; i++) {
    out.reset();
    grow(16 * MB);
    lent.push(out.lend());
  }
  for (const b of lent) out.giveBack(b);
  let reused = 0;
  for (let i = 0; i < 20; i++) {
    out.reset();
    grow(16 * MB);
    if (lent.includes(out.buf)) reused++;
    out.lend();
  }
  // 320 MB given back; the bound keeps under a third of it.
  assert.ok(reused >= 1 && reused <= 6, `${reused} of 20 buffers of 16 MB kept`);
});

test.run();
