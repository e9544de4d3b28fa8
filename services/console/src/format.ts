/** How numbers and times read in the console. */

/** IEC units: every size the console shows is a power of 1024, and says so (a 40,000,000-byte threshold read "38.1 MB"). */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → "1.5 KiB" (powers of 1024, as DevTools computes heap sizes); the console's one size formatter. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? '-' : ''}${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${UNITS[i]}`;
}

/** A delta with its sign: "+1.2 MiB", "-3". */
export function signed(n: number | undefined, fmt: (v: number) => string = (v) => v.toLocaleString('en')): string {
  if (n === undefined) return '–';
  return n > 0 ? `+${fmt(n)}` : fmt(n);
}

/** Milliseconds as "850 ms" or "4.2 s". */
export function ms(n: number | undefined): string {
  if (n === undefined) return '–';
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** Milliseconds since the epoch as local 24-hour "14:03:02": the chart's axis and legend, in the format of time(). */
export function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * An ISO time as local "2026-11-28 14:03:02": the console's one date format (pages mixed "28/11/2026, 14:03:02",
 * uPlot's "2:03pm" and raw ISO). Year first: unambiguous in every locale.
 */
export function time(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '–';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(d.getTime())}`;
}

/** Milliseconds as a short age: "12 s", "7 min", "3 h", "2 d". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3_600)} h`;
  return `${Math.round(s / 86_400)} d`;
}
