/** @heapcap/state/schedules — Schedules: their specs and checks, timing, the spread of a run over its targets, the scheduler store and job payloads. */
export {
  ScheduleSpecSchema,
  ScheduleSchema,
  RetentionSchema,
  LastRunSchema,
  RUN_OUTCOMES,
  SKIP_REASONS,
  type ScheduleSpec,
  type Schedule,
  type Retention,
  type LastRun,
  type RunOutcome,
  type SkipReason,
} from './schema.ts';
export { checkSchedule, buildSchedule, newScheduleId, type ScheduleCheck, type ScheduleCheckContext, type ScheduleIssue } from './check.ts';
export { nextRuns, intervalAfter, cronProblem, isTimeZone } from './timing.ts';
export { spreadOffsets, type MemberSlot } from './spread.ts';
export { resolveTargets, type PlanResult, type TurnResult } from './run.ts';
export { ScheduleStore, SCHEDULER_OVERDUE_MS, type SchedulerReconcileReport, type ScheduleRunState } from './store.ts';
export {
  SCHEDULE_QUEUE,
  SCHEDULE_RUN_JOB,
  SCHEDULE_MEMBER_JOB,
  RETENTION_JOB,
  JANITOR_SCHEDULER_ID,
  ScheduleRunJobSchema,
  MemberJobSchema,
  memberJobId,
  scheduledTimeOf,
  type MemberJob,
  type ScheduleRunJob,
} from './jobs.ts';
