/** A heap-used sparkline: an SVG polyline (attributes, not styles, so the CSP needs no exception). */
import type { Sample } from '../api.ts';
import { sparkRange } from './spark-scale.ts';

export function Sparkline({ samples, width = 120, height = 28 }: { samples: Sample[]; width?: number; height?: number }) {
  if (samples.length < 2) return <span class="muted">no samples</span>;
  const t0 = samples[0]!.t;
  const t1 = samples[samples.length - 1]!.t;
  const { lo: min, hi } = sparkRange(samples.map((s) => s.heapUsedBytes));
  const span = Math.max(1, hi - min);
  const points = samples
    .map((s) => `${(((s.t - t0) / Math.max(1, t1 - t0)) * (width - 2) + 1).toFixed(1)},${(height - 1 - ((s.heapUsedBytes - min) / span) * (height - 2)).toFixed(1)}`)
    .join(' ');
  return (
    <svg class="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label="heap used, recent samples">
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}
