import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A real pino logger whose JSON lines are kept, parsed, for assertions. */
export function captureLog(): { log: Logger; lines: Array<Record<string, unknown>>; events: (name: string) => Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines, events: (name) => lines.filter((l) => l.event === name) };
}
