import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A real pino logger whose JSON lines are kept, parsed, for assertions; `onLine` sees each as it is logged. */
export function captureLog(onLine: (line: Record<string, unknown>) => void = () => undefined): { log: Logger; lines: Array<Record<string, unknown>>; events: (name: string) => Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of chunk.toString().split('\n')) {
        if (!text) continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        onLine(line);
      }
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines, events: (name) => lines.filter((l) => l.event === name) };
}
