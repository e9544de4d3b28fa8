/** V8 version parsing and comparison. */

/** Parse `11.3.244.8-node.38` or `15.6.75.27` into numbers (suffixes dropped). */
export function parseV8Version(version: string): number[] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  if (m === null) return undefined;
  return [m[1], m[2], m[3], m[4] ?? '0'].map(Number);
}

/** Negative when a < b, 0 when equal, positive when a > b (missing parts count as 0). */
export function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * V8 11.5.130 started caching script line ends while generating a snapshot.
 * Before it, every function's position lookup scans its script from the start.
 */
export const LINE_ENDS_CACHED_SINCE = [11, 5, 130] as const;

/** True when the V8 version is known and older than LINE_ENDS_CACHED_SINCE. */
export function needsLineEndsWarm(v8Version: string | undefined): boolean | undefined {
  const v = v8Version === undefined ? undefined : parseV8Version(v8Version);
  if (v === undefined) return undefined;
  return compareVersions(v, LINE_ENDS_CACHED_SINCE) < 0;
}
