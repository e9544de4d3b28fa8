/** The sparkline's vertical scale, apart from its drawing so a test can read it. */

/**
 * The smallest span the scale shows: 10 % of the largest value, at least 1 MiB. A flat target's heap moves by a few
 * hundred KiB between samples; scaled to its own min..max, that noise filled the whole height and read as swings.
 */
export const MIN_SPAN_FRACTION = 0.1;
export const MIN_SPAN_BYTES = 1024 * 1024;

/** The value range [lo, hi] to draw `values` in: their own range, widened about its middle to the floor above. */
export function sparkRange(values: readonly number[]): { lo: number; hi: number } {
  const max = Math.max(...values);
  const min = Math.min(...values);
  const span = Math.max(max - min, max * MIN_SPAN_FRACTION, MIN_SPAN_BYTES);
  const mid = (max + min) / 2;
  // Never below 0: a heap has no negative size.
  const lo = Math.max(0, mid - span / 2);
  return { lo, hi: lo + span };
}
