/**
 * /metrics for a process of several serving threads: each thread's
 * exposition, series by series, summed into the main thread's (docs/threads.md).
 * Requests, bodies, the cache, held requests and heaps add up; what the
 * process has once (its memory and CPU, the snapshot, the keys, the
 * certificate, the limiter's state, draining) is the main thread's alone;
 * an event loop's delay is the worst thread's.
 */
const ONCE = /^proxylist_(process_|snapshot_|keys_|tls_|origin_|draining|limiter_up|nodejs_version_info|engine_info|threads)/;
const WORST = /^proxylist_nodejs_eventloop_lag_/;

/** A sample line's series (name and labels) and its value; null for comments and blank lines. */
function sample(line: string): [string, number] | null {
  if (line === '' || line.startsWith('#')) return null;
  const at = line.lastIndexOf(' ');
  return [line.slice(0, at), Number(line.slice(at + 1))];
}

const nameOf = (series: string): string => {
  const brace = series.indexOf('{');
  return brace < 0 ? series : series.slice(0, brace);
};

/**
 * The main thread's exposition with every other thread's samples added in.
 * A series only another thread has goes after the last sample of its name
 * in the main thread's (a family's samples stay together), or at the end.
 */
export function sumExpositions(main: string, others: readonly string[]): string {
  const extra = new Map<string, number>();
  for (const text of others) {
    for (const line of text.split('\n')) {
      const s = sample(line);
      if (!s || ONCE.test(nameOf(s[0]))) continue;
      const [series, value] = s;
      const seen = extra.get(series);
      extra.set(series, seen === undefined ? value : WORST.test(nameOf(series)) ? Math.max(seen, value) : seen + value);
    }
  }
  const lines = main.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const lastOfName = new Map<string, number>();
  lines.forEach((line, i) => {
    const s = sample(line);
    if (!s) return;
    const [series, value] = s;
    lastOfName.set(nameOf(series), i);
    const more = extra.get(series);
    if (more === undefined) return;
    extra.delete(series);
    lines[i] = `${series} ${WORST.test(nameOf(series)) ? Math.max(value, more) : value + more}`;
  });
  const after = new Map<number, string[]>();
  const atEnd: string[] = [];
  for (const [series, value] of extra) {
    const at = lastOfName.get(nameOf(series));
    if (at === undefined) atEnd.push(`${series} ${value}`);
    else after.set(at, [...(after.get(at) ?? []), `${series} ${value}`]);
  }
  const out: string[] = [];
  lines.forEach((line, i) => out.push(line, ...(after.get(i) ?? [])));
  return [...out, ...atEnd].join('\n') + '\n';
}
