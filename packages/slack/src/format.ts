/** Numbers as an engineer reads them in a channel: sizes, durations, ages, the phase table. */

/** `72.7 MiB`: binary mebibytes with one decimal, as the CLI and the manifest tools print sizes. */
export function size(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
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
const PHASE_ORDER = ['queued', 'connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'sink', 'upload', 'total'];

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

/** Lines up to what one section holds (3,000 characters), saying how many were left out. */
export function fitLines(lines: string[]): string {
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (used + line.length + 1 > 2_800) break;
    kept.push(line);
    used += line.length + 1;
  }
  const more = lines.length - kept.length;
  return more > 0 ? `${kept.join('\n')}\n…and ${more} more` : kept.join('\n');
}
