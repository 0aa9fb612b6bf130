// A small time-series chart (uPlot) with a text summary for screen
// readers.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

// nonZero marks only the buckets that hold something, so a lone value in
// an hour of zeros or gaps is visible.
function nonZero(u, seriesIdx) {
  const out = [];
  u.data[seriesIdx].forEach((v, i) => v && out.push(i));
  return out;
}

// axisSize is the width of a y axis: its ticks, the gap and its widest
// value as drawn (values grow to "12,000" and more; a fixed width let them
// run under the axis label). The label has its own space (labelSize).
function axisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let size = axis.ticks.size + axis.gap + 4;
  const widest = (values || []).reduce((w, v) => (String(v).length > w.length ? String(v) : w), '');
  if (widest) {
    u.ctx.font = axis.font[0];
    size += u.ctx.measureText(widest).width / devicePixelRatio;
  }
  return Math.max(30, Math.ceil(size));
}

// describeAxis records on the chart's box what its y axis drew (values,
// font, width, tick size and gap), so a test can check that every value
// fits beside its label.
function describeAxis(u) {
  const a = u.axes[1];
  const box = u.root.parentElement;
  if (!box || !a) return;
  box.dataset.yValues = JSON.stringify(a._values || []);
  box.dataset.yFont = a.font[0];
  box.dataset.ySize = String(a._size);
  box.dataset.yReserved = String(a.ticks.size + a.gap);
}

// series: [{label, values, color, dash}]; xs: seconds since epoch.
export function Chart({ title, xs, series, yLabel, summary, height = 150 }) {
  const box = useRef(null);
  const plot = useRef(null);
  const key = series.map((s) => s.label).join('|');
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [
        { stroke: '#374151', grid: { stroke: '#e5e7eb' }, ticks: { stroke: '#d1d5db' } },
        { stroke: '#374151', grid: { stroke: '#e5e7eb' }, ticks: { stroke: '#d1d5db' }, label: yLabel, size: axisSize },
      ],
      hooks: { draw: [describeAxis] },
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, dash: s.dash, spanGaps: false, points: { show: true, size: 5, filter: nonZero } }))],
    };
    plot.current = new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
    const ro = new ResizeObserver(() => plot.current && plot.current.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current && plot.current.destroy();
      plot.current = null;
    };
  }, [key, height, yLabel]);
  useEffect(() => {
    plot.current && plot.current.setData([xs, ...series.map((s) => s.values)]);
  });
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} class="chart-box" role="img" aria-label={`${title}: ${summary}`} />
    </figure>
  );
}
