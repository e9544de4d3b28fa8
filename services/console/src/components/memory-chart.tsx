/**
 * A target's memory over time (uPlot: canvas, ~50 KB, draws 100k points in a
 * few ms) with its captures as vertical markers on the same time axis, coloured
 * by trigger kind and labelled by status.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { CaptureRecord, Sample } from '../api.ts';
import { bytes, clock } from '../format.ts';

/** Marker colours by trigger kind (the legend below the chart says which is which). */
export const TRIGGER_COLOURS: Record<string, string> = {
  rest: '#2563eb',
  cli: '#7c3aed',
  slack: '#db2777',
  schedule: '#0d9488',
  watch: '#dc2626',
};

function markers(captures: CaptureRecord[]): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const { ctx } = u;
          const { top, height } = u.bbox;
          ctx.save();
          for (const c of captures) {
            const x = Math.round(u.valToPos(Date.parse(c.createdAt) / 1000, 'x', true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.strokeStyle = TRIGGER_COLOURS[c.trigger.kind] ?? '#555';
            ctx.lineWidth = 2 * devicePixelRatio;
            ctx.setLineDash(c.status === 'succeeded' ? [] : [4 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
}

export interface MemoryChartProps {
  samples: Sample[];
  captures: CaptureRecord[];
  /** The range shown, seconds since 1970 (captures without samples still get an axis). */
  from: number;
  to: number;
}

export function MemoryChart({ samples, captures, from, to }: MemoryChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const data: uPlot.AlignedData = [
      samples.map((s) => s.t / 1000),
      samples.map((s) => s.heapUsedBytes),
      samples.map((s) => s.heapTotalBytes),
      samples.map((s) => s.heapLimitBytes),
      samples.map((s) => s.rssBytes),
    ];
    // Away from the cursor (idx null) the legend shows each series' newest value, not "–":
    // the numbers one opens the page for are readable without hovering.
    const newest = (i: number): number | null => {
      const col = data[i]!;
      for (let k = col.length - 1; k >= 0; k--) if (col[k] !== null && col[k] !== undefined) return col[k]!;
      return null;
    };
    const value = (_u: uPlot, v: number | null, si: number, idx: number | null) => {
      const shown = idx === null ? newest(si) : v;
      return shown === null ? '–' : bytes(shown);
    };
    const at = (_u: uPlot, v: number | null, _si: number, idx: number | null) => {
      const t = idx === null ? newest(0) : v;
      return t === null ? '–' : idx === null ? `newest, ${clock(t * 1000)}` : clock(t * 1000);
    };
    // The y axis fits what the heap does, not the heap limit: a 50 MB heap under a 4 GB limit would be a
    // flat line at the bottom. The limit line is drawn once the heap comes within half of it (when it
    // matters: an OOM ahead); its value is in the legend either way.
    const peak = samples.reduce((m, s) => Math.max(m, s.heapUsedBytes, s.heapTotalBytes, s.rssBytes ?? 0), 0);
    const limit = samples.reduce((m, s) => Math.max(m, s.heapLimitBytes ?? 0), 0);
    const top = limit > 0 && limit <= peak * 2 ? limit * 1.05 : peak * 1.15;
    el.dataset['yMax'] = String(Math.round(top));
    const plot = new uPlot(
      {
        width: Math.max(240, el.clientWidth),
        height: 280,
        scales: { x: { time: true, range: () => [from, to] }, y: { range: () => [0, top > 0 ? top : 1] } },
        // The time axis in the console's one format (uPlot's default read "2:03pm" beside "14:03:02").
        axes: [{ values: (_u, vals) => vals.map((v) => clock(v * 1000)) }, { values: (_u, vals) => vals.map((v) => bytes(v)), size: 70 }],
        series: [
          { label: 'time', value: at },
          { label: 'heap used', stroke: '#2563eb', width: 2, value },
          { label: 'heap total', stroke: '#93c5fd', width: 1, value },
          { label: 'heap limit', stroke: '#dc2626', width: 1, dash: [6, 4], value },
          { label: 'RSS', stroke: '#6b7280', width: 1, value },
        ],
        plugins: [markers(captures)],
      },
      data,
      el,
    );
    // The chart follows its box (a phone turned, a window resized): uPlot draws at a fixed size.
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: 280 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [samples, captures, from, to]);
  return <div ref={box} class="chart" data-testid="memory-chart" />;
}
