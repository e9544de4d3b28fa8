/**
 * Schedules: what to capture (one target, or a label selector resolved at each
 * run), when (`every` a duration, or a 5-field `cron` in a time zone), with
 * which capture options, and how many snapshots to keep. The API validates
 * bodies with ScheduleSpecSchema (shape) and then `checkSchedule` (meaning:
 * the cron parses, the interval is long enough, the target exists).
 */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { CaptureOptionsSchema } from '../schemas.ts';
import { SelectorSchema } from '../selectors.ts';
import { RULE_SOURCES } from '../rule-source.ts';

/** Per-schedule retention; a missing field takes the global default (HEAPCAP_RETENTION_*). */
export const RetentionSchema = z.strictObject({
  /** Keep the newest N artifacts of this schedule (pinned ones are kept on top of them). */
  keepLast: z.number().int().min(1, 'keepLast must be at least 1 (pause or delete the schedule to stop capturing)').max(100_000).optional(),
  /** Delete artifacts older than this many days (fractions allowed). */
  maxAgeDays: z.number().positive('maxAgeDays must be more than 0').max(36_500).optional(),
});
export type Retention = z.infer<typeof RetentionSchema>;

const EXACTLY_ONE_OF_EACH = {
  allOf: [{ oneOf: [{ required: ['target'] }, { required: ['selector'] }] }, { oneOf: [{ required: ['every'] }, { required: ['cron'] }] }],
  dependentRequired: { timezone: ['cron'] },
};

/** What a caller sends to create or replace a schedule. Exactly one of target|selector and one of every|cron. */
export const ScheduleSpecSchema = z
  .strictObject({
    id: IdSchema.optional().describe('default: generated (sch-…)'),
    target: IdSchema.optional().describe('one registered target'),
    selector: SelectorSchema.optional().describe('a label match over the registry, resolved at each run, e.g. {"service": "checkout"}'),
    every: z.string().max(40).optional().describe('an interval: "90s", "15m", "6h", "1d", "1h30m"'),
    cron: z.string().max(200).optional().describe('a 5-field cron expression, e.g. "*/30 * * * *"'),
    timezone: z.string().max(64).optional().describe('IANA time zone of the cron expression (default UTC)'),
    options: CaptureOptionsSchema.optional(),
    retention: RetentionSchema.optional(),
    maxConcurrent: z.number().int().min(1).max(100).optional().describe('captures of a selector group in flight at once (default 1)'),
    enabled: z.boolean().optional().describe('false: created paused (default true)'),
    reason: z.string().max(1000).optional().describe('recorded as the reason of every capture it makes'),
  })
  // What the refinement below checks, for the OpenAPI document (JSON Schema
  // says "exactly one of two optional fields" as a oneOf of `required`).
  .meta(EXACTLY_ONE_OF_EACH)
  .superRefine((s, ctx) => {
    if ((s.target === undefined) === (s.selector === undefined)) {
      ctx.addIssue({ code: 'custom', path: [s.target === undefined ? 'target' : 'selector'], message: 'give exactly one of target (an id) or selector (labels)' });
    }
    if ((s.every === undefined) === (s.cron === undefined)) {
      ctx.addIssue({ code: 'custom', path: [s.every === undefined ? 'every' : 'cron'], message: 'give exactly one of every (e.g. "15m") or cron (e.g. "*/15 * * * *")' });
    }
    if (s.timezone !== undefined && s.cron === undefined) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'timezone applies to cron only' });
    }
  });
export type ScheduleSpec = z.infer<typeof ScheduleSpecSchema>;

/** A stored schedule: the spec with defaults applied, its owner and times. */
export const ScheduleSchema = z.strictObject({
  id: IdSchema,
  target: IdSchema.optional(),
  selector: SelectorSchema.optional(),
  every: z.string().optional(),
  /** `every` in milliseconds (what BullMQ is given). */
  everyMs: z.number().int().positive().optional(),
  cron: z.string().optional(),
  timezone: z.string().optional(),
  options: CaptureOptionsSchema,
  retention: RetentionSchema,
  maxConcurrent: z.number().int().min(1),
  enabled: z.boolean(),
  reason: z.string().optional(),
  /** The token name that created it: it may change it; others need targets:admin. */
  owner: z.string(),
  /** Where it is declared: `file` (HEAPCAP_RULES_FILE; changed only there) or `api`. Missing = `api` (stored before sources existed). */
  source: z.enum(RULE_SOURCES).optional(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export type Schedule = z.infer<typeof ScheduleSchema>;

/** How one target's turn of a run ended (`heapcap_schedule_runs_total{outcome}`). */
export const RUN_OUTCOMES = ['created', 'coalesced', 'skipped'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** Why a turn was skipped. */
export const SKIP_REASONS = ['no_targets', 'target_gone', 'left_group', 'group_busy', 'overdue', 'paused', 'failed'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** The last turn of a schedule's runs, as GET /v1/schedules shows it. */
export const LastRunSchema = z.strictObject({
  /** When the turn ended (created, joined or skipped). */
  at: z.iso.datetime(),
  /** The run it belongs to (the scheduled time). */
  runAt: z.iso.datetime(),
  targetId: z.string().nullable(),
  outcome: z.enum(RUN_OUTCOMES),
  /** True when it joined a capture already queued or running instead of making one. */
  coalesced: z.boolean(),
  reason: z.enum(SKIP_REASONS).optional(),
  captureId: z.string().nullable(),
});
export type LastRun = z.infer<typeof LastRunSchema>;
