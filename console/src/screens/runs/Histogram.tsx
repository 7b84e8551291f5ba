/** The time histogram of the explorer's results: uPlot bars, resized with its container. */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { RunsMeta } from './runsApi.ts';

export function Histogram({ data, total }: { data: NonNullable<RunsMeta['histogram']>; total: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = data.buckets.map((b) => b.t / 1000);
    const ys = data.buckets.map((b) => b.count);
    const width = () => Math.max(200, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 110,
        legend: { show: false },
        cursor: { show: true, drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: '#57606a', grid: { show: false }, size: 28, font: '11px system-ui' },
          { stroke: '#57606a', size: 36, font: '11px system-ui', grid: { stroke: '#eaeef2' }, ticks: { show: false } },
        ],
        series: [
          {},
          {
            label: 'Runs',
            fill: '#0b5cad',
            stroke: '#0b5cad',
            paths: uPlot.paths.bars!({ size: [0.85, 40] }),
            points: { show: false },
          },
        ],
      },
      [xs, ys],
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 110 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [data]);
  const peak = data.buckets.reduce((m, b) => Math.max(m, b.count), 0);
  const digits = data.to - data.from < 3_600_000 ? 19 : 16;
  const fmt = (t: number) => new Date(t).toISOString().slice(0, digits).replace('T', ' ');
  const span = `${fmt(data.from)} to ${fmt(data.to)} UTC`;
  return (
    <figure className="runs-histogram" aria-label="Runs over time">
      <div
        ref={box}
        className="runs-histogram-plot"
        role="img"
        aria-label={`Histogram of ${total.toLocaleString()} runs over time, ${span}; busiest bar ${peak.toLocaleString()} runs`}
      />
      <figcaption className="muted">Runs over time (last update), {span}</figcaption>
    </figure>
  );
}
