/**
 * When a schedule runs: `every` (BullMQ aligns runs to multiples of the
 * interval after the first) or a 5-field cron expression in a time zone
 * (parsed by cron-parser, the parser BullMQ itself uses, so what we validate
 * and preview is what runs).
 */

// cron-parser is CommonJS: its functions hang off the default export under Node's ESM loader.
const { parseExpression } = cronParser;
import cronParser from 'cron-parser';
import type { Schedule } from './schema.ts';

/** Why `expr` is not a 5-field cron expression valid in `timezone`, or undefined when it is. */
export function cronProblem(expr: string, timezone: string | undefined): string | undefined {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5) return `a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has ${fields.length}`;
  if (timezone !== undefined && !isTimeZone(timezone)) return `unknown time zone "${timezone}" (an IANA name such as Europe/Berlin or UTC)`;
  try {
    parseExpression(expr, { tz: timezone ?? 'UTC' }).next();
    return undefined;
  } catch (err) {
    return `not a valid cron expression: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** True for a time zone name this runtime knows. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * A lower bound of the gap between consecutive runs of a (valid) cron
 * expression: the shortest distance between its times of day (minute × hour
 * fields), wrapping midnight. Exact for expressions that run every day;
 * others can only be further apart. (Walking the runs instead is slow:
 * cron-parser steps minute by minute, ~1 s for 200 weekday runs here.)
 */
export function cronMinGapMs(expr: string, timezone: string | undefined): number {
  const { minute, hour } = parseExpression(expr, { tz: timezone ?? 'UTC' }).fields;
  const times = hour.flatMap((h) => minute.map((m) => h * 60 + m)).sort((a, b) => a - b);
  let min = 1_440 - times[times.length - 1]! + times[0]!;
  for (let i = 1; i < times.length; i++) min = Math.min(min, times[i]! - times[i - 1]!);
  return min * 60_000;
}

/** The next `count` cron runs strictly after `fromMs`. */
function cronRuns(expr: string, timezone: string | undefined, fromMs: number, count: number): number[] {
  const it = parseExpression(expr, { tz: timezone ?? 'UTC', currentDate: new Date(fromMs) });
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(it.next().getTime());
  return out;
}

/**
 * The next `count` run times of an enabled schedule. `nextMs` is the time of
 * the run BullMQ has queued (its scheduler's `next`), when known: runs follow
 * from it; otherwise from `nowMs`.
 */
export function nextRuns(schedule: Pick<Schedule, 'everyMs' | 'cron' | 'timezone'>, nowMs: number, nextMs: number | undefined, count = 3): number[] {
  if (schedule.everyMs !== undefined) {
    const first = nextMs ?? nowMs;
    return Array.from({ length: count }, (_, i) => first + i * schedule.everyMs!);
  }
  if (schedule.cron === undefined) return [];
  if (nextMs === undefined) return cronRuns(schedule.cron, schedule.timezone, nowMs, count);
  return [nextMs, ...cronRuns(schedule.cron, schedule.timezone, nextMs, count - 1)];
}

/** The time between the run at `runAtMs` and the one after it: the window a group's captures spread over. */
export function intervalAfter(schedule: Pick<Schedule, 'everyMs' | 'cron' | 'timezone'>, runAtMs: number): number {
  if (schedule.everyMs !== undefined) return schedule.everyMs;
  if (schedule.cron === undefined) throw new Error('a schedule has every or cron');
  return cronRuns(schedule.cron, schedule.timezone, runAtMs, 1)[0]! - runAtMs;
}
