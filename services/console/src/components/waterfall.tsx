/**
 * A capture's phases as a waterfall: each phase starts where the previous
 * ended (the worker's phase clock makes them add up to the total), drawn in SVG.
 */
import { ms } from '../format.ts';

export function Waterfall({ timings, running }: { timings: Record<string, number>; running: string | null }) {
  const phases = Object.entries(timings).filter(([name]) => name !== 'total');
  const total = phases.reduce((sum, [, v]) => sum + v, 0);
  const width = 640;
  const label = 90;
  const value = 70;
  const bar = width - label - value;
  const row = 22;
  let at = 0;
  return (
    <svg class="waterfall" width={width} height={phases.length * row + 4} viewBox={`0 0 ${width} ${phases.length * row + 4}`} role="img" aria-label={`phase waterfall, ${ms(total)} in all`} data-testid="waterfall">
      {phases.map(([name, v], i) => {
        const x = label + (total === 0 ? 0 : (at / total) * bar);
        const w = Math.max(1, total === 0 ? 0 : (v / total) * bar);
        at += v;
        return (
          <g key={name} data-phase={name}>
            <text x={0} y={i * row + 15} class="wf-label">
              {name}
            </text>
            <rect x={x} y={i * row + 4} width={w} height={row - 8} rx={2} class={name === running ? 'wf-bar wf-running' : 'wf-bar'} />
            <text x={width - value + 6} y={i * row + 15} class="wf-value">
              {ms(v)}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
