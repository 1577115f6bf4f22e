/** Pictures the benchmarks write: plain SVG, no dependency. */

export interface Series {
  name: string;
  /** [seconds, milliseconds] */
  points: Array<[number, number]>;
}

const COLOURS = ['#d62728', '#1f77b4', '#2ca02c'];
const W = 900;
const H = 420;
const PAD = { left: 60, right: 20, top: 40, bottom: 50 };

/** The width of a bin of time, whose answers give one point of each line. */
const BIN_S = 0.25;

/** [bin middle in seconds, the p50, p99 and max in ms] of each bin with answers. */
function bins(points: ReadonlyArray<[number, number]>): Array<[number, number, number, number]> {
  const byBin = new Map<number, number[]>();
  for (const [s, ms] of points) {
    const b = Math.floor(s / BIN_S);
    let list = byBin.get(b);
    if (!list) byBin.set(b, (list = []));
    list.push(ms);
  }
  return [...byBin.entries()]
    .sort(([a], [b]) => a - b)
    .map(([b, ms]) => {
      ms.sort((x, y) => x - y);
      const q = (f: number) => ms[Math.min(ms.length - 1, Math.floor(f * ms.length))];
      return [(b + 0.5) * BIN_S, q(0.5), q(0.99), ms[ms.length - 1]];
    });
}

/**
 * Latency over time: per series (a colour) and per quarter second, the p50
 * (dashed), the p99 (solid) and the slowest answer (dots), on a
 * logarithmic axis from 0.1 ms (where nothing on loopback is faster) to the
 * slowest answer; `band` shades the seconds of the burst.
 */
export function latencyPicture(series: readonly Series[], title: string, band: [number, number]): string {
  const all = series.flatMap((s) => s.points);
  const xMax = Math.max(...all.map(([x]) => x));
  const yMin = 0.1;
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(1, ...all.map(([, y]) => y))));
  const x = (s: number) => PAD.left + (s / xMax) * (W - PAD.left - PAD.right);
  const y = (ms: number) => H - PAD.bottom - ((Math.log10(Math.max(ms, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (H - PAD.top - PAD.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${escape(title)}</text>`,
    `<rect x="${x(band[0]).toFixed(1)}" y="${PAD.top}" width="${(x(band[1]) - x(band[0])).toFixed(1)}" height="${H - PAD.top - PAD.bottom}" fill="#f2f2f2"/>`,
  ];
  for (let ms = yMin; ms <= yMax * 1.001; ms *= 10) {
    out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(ms).toFixed(1)}" y2="${y(ms).toFixed(1)}" stroke="#ddd"/>`, `<text x="${PAD.left - 6}" y="${(y(ms) + 4).toFixed(1)}" text-anchor="end">${ms >= 1 ? ms.toFixed(0) : ms.toFixed(1)} ms</text>`);
  }
  for (let s = 0; s <= xMax; s += Math.max(1, Math.round(xMax / 12))) out.push(`<text x="${x(s).toFixed(1)}" y="${H - PAD.bottom + 18}" text-anchor="middle">${s} s</text>`);
  out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${H - PAD.bottom}" y2="${H - PAD.bottom}" stroke="#000"/>`, `<line x1="${PAD.left}" x2="${PAD.left}" y1="${PAD.top}" y2="${H - PAD.bottom}" stroke="#000"/>`);
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const b = bins(s.points);
    const line = (k: 1 | 2) => b.map((p) => `${x(p[0]).toFixed(1)},${y(p[k]).toFixed(1)}`).join(' ');
    out.push(`<polyline points="${line(1)}" fill="none" stroke="${colour}" stroke-dasharray="4 3"/>`, `<polyline points="${line(2)}" fill="none" stroke="${colour}" stroke-width="1.5"/>`);
    for (const p of b) out.push(`<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[3]).toFixed(1)}" r="2" fill="${colour}"/>`);
    out.push(`<circle cx="${PAD.left + 10 + i * 300}" cy="${H - 14}" r="4" fill="${colour}"/>`, `<text x="${PAD.left + 20 + i * 300}" y="${H - 10}">${escape(s.name)}: ${s.points.length} answers</text>`);
  });
  out.push(`<text x="${W - PAD.right}" y="${PAD.top - 6}" text-anchor="end">dashed p50, solid p99, dots the slowest, per ${BIN_S} s</text>`, '</svg>\n');
  return out.join('\n');
}

const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
