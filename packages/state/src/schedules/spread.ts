/**
 * Spreading a group's captures over the interval. Snapshotting every replica
 * of a service in the same second pauses them all together (an outage), so
 * the N members of a run get evenly spaced start offsets: member i (in target
 * id order) starts at i × interval / N. Deterministic for a given group, as
 * far apart as the interval allows, and the last one starts a full gap before
 * the next run's first.
 */

/** One member of a run and when it starts, relative to the run. */
export interface MemberSlot {
  targetId: string;
  offsetMs: number;
}

/** Evenly spaced offsets within `intervalMs` for `targetIds` (sorted here, so callers' order does not matter). */
export function spreadOffsets(targetIds: readonly string[], intervalMs: number): MemberSlot[] {
  const ids = [...new Set(targetIds)].sort();
  const n = ids.length;
  return ids.map((targetId, i) => ({ targetId, offsetMs: Math.floor((i * intervalMs) / n) }));
}
