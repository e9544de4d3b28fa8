/**
 * The `heapcap-schedules` BullMQ queue: one job scheduler per enabled schedule
 * (scheduler id = schedule id) producing `schedule-run` jobs, the `member` jobs
 * a run fans out into (one per target, delayed by its spread offset), and the
 * janitor's own scheduler (id `_janitor`: schedule ids start with a letter or
 * digit, so it cannot collide) producing `retention` jobs. BullMQ runs each
 * scheduler iteration once, whichever replica picks it, and after downtime it
 * runs one overdue iteration and continues from now: no catch-up burst.
 */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';

/** The queue of schedule runs, member turns and janitor runs. */
export const SCHEDULE_QUEUE = 'heapcap-schedules';
/** A schedule's run (from its job scheduler). */
export const SCHEDULE_RUN_JOB = 'schedule-run';
/** One target's turn of a run. */
export const SCHEDULE_MEMBER_JOB = 'schedule-member';
/** A retention run (from the janitor's job scheduler). */
export const RETENTION_JOB = 'retention';
/** The janitor's scheduler id. */
export const JANITOR_SCHEDULER_ID = '_janitor';

export const ScheduleRunJobSchema = z.strictObject({ scheduleId: IdSchema });
export type ScheduleRunJob = z.infer<typeof ScheduleRunJobSchema>;

export const MemberJobSchema = z.strictObject({
  scheduleId: IdSchema,
  targetId: IdSchema,
  /** The run's scheduled time (ms). */
  runAt: z.number().int(),
  /** Past this (the next run) the turn is skipped rather than made late. */
  deadline: z.number().int(),
  /** Set when the turn had to wait for its group: a turn that then runs out of time was skipped as `group_busy`. */
  waited: z.literal('group_busy').optional(),
});
export type MemberJob = z.infer<typeof MemberJobSchema>;

/** A member job's id: one per (schedule, run, target), so a retried run never doubles a turn. `+` is outside the id alphabet. */
export function memberJobId(m: Pick<MemberJob, 'scheduleId' | 'runAt' | 'targetId'>): string {
  return `m+${m.scheduleId}+${m.runAt}+${m.targetId}`;
}

/** BullMQ keeps finished jobs of this queue only this long/many (the records and lastRun are the history). */
export const FINISHED_JOBS = { removeOnComplete: { age: 3_600, count: 1_000 }, removeOnFail: { age: 24 * 3_600, count: 1_000 } } as const;

/**
 * The scheduled time of a scheduler's job. BullMQ names each iteration
 * `repeat:<scheduler id>:<scheduled ms>`; that is the one reliable source
 * (an `every` iteration's `opts.prevMillis` is unset, and its `timestamp` is
 * when the previous iteration started, not when this one is due). Falls back
 * to `timestamp + delay` for an id of another shape.
 */
export function scheduledTimeOf(job: { id?: string | undefined; timestamp: number; delay?: number | undefined }): number {
  const ms = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  return job.id?.startsWith('repeat:') === true && Number.isSafeInteger(ms) && ms > 0 ? ms : job.timestamp + (job.delay ?? 0);
}
