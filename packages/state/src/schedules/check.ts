/**
 * What the schema cannot check: that the cron expression parses, that the
 * interval is not below HEAPCAP_SCHEDULE_MIN_INTERVAL, that the target is
 * registered and the selector matches something now. Each problem names the
 * field, so the API answers 400 `validation_failed` with it and creates nothing.
 *
 * A selector matching nothing is refused (not accepted with a warning): a
 * typo in a label is far likelier than a group with no replicas yet, and a
 * schedule that silently captures nothing is found out only when the
 * snapshots are needed.
 */
import { formatDuration, newCaptureId, parseDuration } from '@heapcap/config';
import { CaptureOptionsSchema, type Target } from '../schemas.ts';
import { selectTargets } from '../selectors.ts';
import type { Schedule, ScheduleSpec } from './schema.ts';
import { cronMinGapMs, cronProblem } from './timing.ts';

/** What a check needs: the minimum interval and the registry as it is now. */
export interface ScheduleCheckContext {
  minIntervalMs: number;
  targets: readonly Target[];
}

/** One bad field: dotted path in the body, and why. */
export interface ScheduleIssue {
  path: string;
  message: string;
}

/** The outcome of a check: problems (empty when fine), how many targets it matches now, and `every` in ms. */
export interface ScheduleCheck {
  issues: ScheduleIssue[];
  matches: number;
  everyMs: number | undefined;
}

/** Check a spec (already shape-valid) against the settings and the registry. */
export function checkSchedule(spec: ScheduleSpec, ctx: ScheduleCheckContext): ScheduleCheck {
  const issues: ScheduleIssue[] = [];
  const min = formatDuration(ctx.minIntervalMs);
  let everyMs: number | undefined;
  if (spec.every !== undefined) {
    everyMs = parseDuration(spec.every);
    if (everyMs === undefined) issues.push({ path: 'every', message: `"${spec.every}" is not a duration: use a number and a unit (ms, s, m, h, d), e.g. "90s", "15m", "6h", "1h30m"` });
    else if (everyMs < ctx.minIntervalMs) issues.push({ path: 'every', message: `${spec.every} is below the minimum interval ${min} (HEAPCAP_SCHEDULE_MIN_INTERVAL)` });
    else if (everyMs > 7 * 86_400_000) issues.push({ path: 'every', message: `${spec.every} is longer than 7 days: use cron for rarer schedules` });
  }
  if (spec.cron !== undefined) {
    const problem = cronProblem(spec.cron, spec.timezone);
    if (problem !== undefined) issues.push({ path: problem.startsWith('unknown time zone') ? 'timezone' : 'cron', message: problem });
    else {
      // Cron runs at most once a minute: below that nothing to check.
      const gap = ctx.minIntervalMs > 60_000 ? cronMinGapMs(spec.cron, spec.timezone) : Infinity;
      if (gap < ctx.minIntervalMs) issues.push({ path: 'cron', message: `"${spec.cron}" runs every ${formatDuration(gap)}, below the minimum interval ${min} (HEAPCAP_SCHEDULE_MIN_INTERVAL)` });
    }
  }
  let matches = 0;
  if (spec.target !== undefined) {
    matches = ctx.targets.some((t) => t.id === spec.target) ? 1 : 0;
    if (matches === 0) issues.push({ path: 'target', message: `no target "${spec.target}" in the registry (GET /v1/targets lists them)` });
  } else if (spec.selector !== undefined) {
    matches = selectTargets(ctx.targets, spec.selector).length;
    if (matches === 0) issues.push({ path: 'selector', message: 'matches no registered target (labels are compared exactly; GET /v1/targets shows each target\'s labels)' });
  }
  return { issues, matches, everyMs };
}

/** A new schedule id: `sch-` and a lower-case ULID (sorts by creation time). */
export function newScheduleId(now = Date.now()): string {
  return `sch-${newCaptureId(now).toLowerCase()}`;
}

/** The stored schedule for a checked spec. A replacement keeps the id, owner and creation time of `existing`. */
export function buildSchedule(spec: ScheduleSpec, check: ScheduleCheck, owner: string, existing: Schedule | null, now = new Date()): Schedule {
  const iso = now.toISOString();
  return {
    id: existing?.id ?? spec.id ?? newScheduleId(now.getTime()),
    target: spec.target,
    selector: spec.selector,
    // A checked spec has `everyMs` exactly when it has `every`.
    every: spec.every,
    everyMs: check.everyMs,
    cron: spec.cron?.trim().split(/\s+/).join(' '),
    timezone: spec.timezone,
    options: CaptureOptionsSchema.parse(spec.options ?? {}),
    retention: spec.retention ?? {},
    maxConcurrent: spec.maxConcurrent ?? 1,
    enabled: spec.enabled ?? true,
    reason: spec.reason,
    owner: existing?.owner ?? owner,
    createdAt: existing?.createdAt ?? iso,
    updatedAt: iso,
  };
}
