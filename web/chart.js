// SPDX-License-Identifier: Apache-2.0
// A small SVG line chart for the dashboard: a few series over the last minutes, gaps where a
// value is missing (a failed scrape, a server restart), the latest value and the axis maximum
// printed. Built with DOM calls, no markup strings.

const NS = 'http://www.w3.org/2000/svg';
const COLORS = ['#2563eb', '#10b981', '#f59e0b', '#ef4444'];
const W = 300, H = 120, PAD = 18;

function el(name, attrs) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// series: [{name, points: [{t (ms), v (number or null)}]}], drawn over [now - spanMs, now].
export function drawChart(container, series, spanMs, now = Date.now()) {
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img' });
  let max = 0;
  for (const s of series) for (const p of s.points) if (p.v !== null && p.v > max) max = p.v;
  const top = max > 0 ? max * 1.1 : 1;
  const x = (t) => PAD + ((t - (now - spanMs)) / spanMs) * (W - 2 * PAD);
  const y = (v) => H - PAD - (v / top) * (H - 2 * PAD);
  svg.append(el('line', { class: 'axis', x1: PAD, y1: H - PAD, x2: W - PAD, y2: H - PAD }));
  svg.append(el('line', { class: 'axis', x1: PAD, y1: PAD, x2: PAD, y2: H - PAD }));
  const label = (text, attrs) => {
    const t = el('text', attrs);
    t.textContent = text;
    svg.append(t);
  };
  label(formatValue(max), { x: PAD + 2, y: PAD - 4 });
  const summary = [];
  series.forEach((s, i) => {
    let d = '';
    let pen = false;
    for (const p of s.points) {
      if (p.t < now - spanMs || p.v === null) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`;
      pen = true;
    }
    if (d) svg.append(el('path', { d, fill: 'none', stroke: COLORS[i % COLORS.length], 'stroke-width': 1.5 }));
    const last = [...s.points].reverse().find((p) => p.v !== null);
    const text = `${s.name} ${last ? formatValue(last.v) : '–'}`;
    summary.push(text);
    label(text, { x: W - PAD - 80 * (series.length - i), y: H - 4, fill: COLORS[i % COLORS.length] });
  });
  const title = el('title', {});
  title.textContent = summary.join(', ');
  svg.prepend(title);
  container.replaceChildren(svg);
}

export function formatValue(v) {
  if (v === null || v === undefined) return '–';
  if (v === 0) return '0';
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return v.toFixed(1);
  return v.toFixed(3);
}
