/** Numbers as an engineer reads them in a channel: sizes, durations, ages, the phase table. */

/** `76.2 MB` (decimal megabytes, like the CLI); bytes below 1 MB as `812 kB`. */
export function size(bytes: number): string {
  if (bytes < 1e6) return `${Math.max(1, Math.round(bytes / 1e3))} kB`;
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** `12 ms`, `4.5 s`, `3 min 20 s`. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.round(ms / 1_000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** `just now`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function age(iso: string, nowMs: number = Date.now()): string {
  const s = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1_000));
  if (s < 60) return 'just now';
  if (s < 3_600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** The phases in the order a capture runs them; other keys follow in their own order. */
const PHASE_ORDER = ['queued', 'connect', 'preflight', 'warm', 'gc', 'generate', 'serialize', 'sink', 'upload', 'total'];

/** A two-column table of phase timings for a code block; `total` last, after a rule. */
export function timingsTable(timings: Record<string, number>): string {
  const keys = [...PHASE_ORDER.filter((k) => k in timings), ...Object.keys(timings).filter((k) => !PHASE_ORDER.includes(k))];
  const phases = keys.filter((k) => k !== 'total');
  const width = Math.max(5, ...keys.map((k) => k.length));
  const row = (k: string): string => `${k.padEnd(width)}  ${duration(timings[k] ?? 0).padStart(10)}`;
  const lines = phases.map(row);
  if ('total' in timings) lines.push('-'.repeat(width + 12), row('total'));
  return lines.join('\n');
}
