/**
 * Whether a target answers: "up, sampled 12 s ago", or "unreachable: connection refused" with the age of its last
 * sample (issue 40: a target killed minutes earlier still showed its last heap numbers as if current).
 */
import type { TargetDown } from '../api.ts';
import { ago, time } from '../format.ts';

/** The status of one target from its down record and its newest sample time (ms; null: none in the window read). */
export function TargetHealth({ down, lastSampleAt }: { down: TargetDown | null | undefined; lastSampleAt: number | null | undefined }) {
  const now = Date.now();
  const last = lastSampleAt === null || lastSampleAt === undefined ? 'no recent sample' : `last sample ${ago(now - lastSampleAt)} ago`;
  if (down !== null && down !== undefined) {
    return (
      <span class="health down" data-testid="health" data-up="false" title={`${down.code}: ${down.message}; failing since ${time(new Date(down.since).toISOString())}`}>
        unreachable: {down.reason} <span class="muted">({last})</span>
      </span>
    );
  }
  if (lastSampleAt === null || lastSampleAt === undefined) return <span class="health muted" data-testid="health" data-up="unknown">not sampled</span>;
  return (
    <span class="health" data-testid="health" data-up="true">
      up <span class="muted">(sampled {ago(now - lastSampleAt)} ago)</span>
    </span>
  );
}
