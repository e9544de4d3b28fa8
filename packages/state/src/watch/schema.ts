/**
 * Watch rules: "when this target's memory stays above a threshold for a
 * while, capture once". A rule watches one target or a label selector
 * (resolved at every tick, like schedules), on one metric of the samples the
 * watcher takes; it fires once per episode, then waits for the condition to
 * clear and its cooldown to pass, and never more than `maxPerDay` times in any
 * 24 hours per target. The API validates bodies with WatchRuleSpecSchema
 * (shape) and `checkWatchRule` (meaning: the target exists, the cooldown is
 * not shorter than the watch interval).
 */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { CaptureOptionsSchema } from '../schemas.ts';
import { SelectorSchema } from '../selectors.ts';
import { ProfileSettingSchema } from '../profile-setting.ts';
import { RULE_SOURCES } from '../rule-source.ts';
import { WatchSampleSchema } from './sample.ts';

/**
 * What a rule compares with `above`: heap used / heap limit (0–1), heap used
 * in bytes, the process's resident set (Node.js only), or how much the heap
 * grew over the last `windowSeconds`.
 */
export const WATCH_METRICS = ['heapUsedRatio', 'heapUsedBytes', 'rssBytes', 'heapGrowthBytes'] as const;
export type WatchMetric = (typeof WATCH_METRICS)[number];

const DAY_S = 86_400;

/** What the refinement below checks, for the OpenAPI document: the threshold's range and windowSeconds, per metric. */
const PER_METRIC = {
  oneOf: [
    { properties: { metric: { const: 'heapUsedRatio' }, above: { exclusiveMinimum: 0, exclusiveMaximum: 1 } }, not: { required: ['windowSeconds'] } },
    { properties: { metric: { enum: ['heapUsedBytes', 'rssBytes'] }, above: { exclusiveMinimum: 0 } }, not: { required: ['windowSeconds'] } },
    { properties: { metric: { const: 'heapGrowthBytes' }, above: { exclusiveMinimum: 0 } }, required: ['windowSeconds'] },
  ],
};

/** The condition: `metric > above`, held for `forSeconds`. */
export const WatchWhenSchema = z
  .strictObject({
    metric: z.enum(WATCH_METRICS).describe('heapUsedRatio (0–1), heapUsedBytes, rssBytes (Node.js only) or heapGrowthBytes (over windowSeconds)'),
    above: z.number().describe('the threshold: a ratio between 0 and 1 for heapUsedRatio, bytes (> 0) for the others'),
    forSeconds: z.number().positive('forSeconds must be more than 0 (how long the condition must hold before the rule fires)').max(DAY_S).describe('how long the condition must hold'),
    windowSeconds: z.number().positive('windowSeconds must be more than 0').max(DAY_S).optional().describe('heapGrowthBytes only: the growth is measured over this window'),
  })
  .meta(PER_METRIC)
  .superRefine((w, ctx) => {
    if (w.metric === 'heapUsedRatio' && !(w.above > 0 && w.above < 1)) {
      ctx.addIssue({ code: 'custom', path: ['above'], message: `heapUsedRatio is heap used / heap limit: give a ratio between 0 and 1 (exclusive), e.g. 0.8, not ${w.above}` });
    }
    if (w.metric !== 'heapUsedRatio' && !(w.above > 0)) {
      ctx.addIssue({ code: 'custom', path: ['above'], message: `${w.metric} is a number of bytes: give more than 0, e.g. 536870912 for 512 MiB` });
    }
    if (w.metric === 'heapGrowthBytes' && w.windowSeconds === undefined) {
      ctx.addIssue({ code: 'custom', path: ['windowSeconds'], message: 'heapGrowthBytes needs windowSeconds: the growth is measured over that window, e.g. 600' });
    }
    if (w.metric !== 'heapGrowthBytes' && w.windowSeconds !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['windowSeconds'], message: 'windowSeconds applies to heapGrowthBytes only' });
    }
  });
export type WatchWhen = z.infer<typeof WatchWhenSchema>;

/** What to capture when the rule fires. */
export const WatchCaptureSchema = z.strictObject({
  options: CaptureOptionsSchema.optional().describe('options of the snapshot (kind is always snapshot first)'),
  samplingSeconds: z
    .number()
    .int()
    .min(1)
    .max(600)
    .optional()
    .describe('when the headroom gate refuses the snapshot, the allocation sampling profile taken instead lasts this long (default HEAPCAP_WATCH_SAMPLING_DURATION)'),
});
export type WatchCapture = z.infer<typeof WatchCaptureSchema>;

const EXACTLY_ONE = { oneOf: [{ required: ['target'] }, { required: ['selector'] }] };

/** What a caller sends to create or replace a rule. Exactly one of target|selector. */
export const WatchRuleSpecSchema = z
  .strictObject({
    id: IdSchema.optional().describe('default: generated (wr-…)'),
    target: IdSchema.optional().describe('one registered target'),
    selector: SelectorSchema.optional().describe('a label match over the registry, resolved at each watch tick'),
    when: WatchWhenSchema,
    cooldownSeconds: z.number().int().min(0).max(30 * DAY_S).optional().describe('after a firing, no new one before this long and before the condition cleared (default 1800; at least the watch interval)'),
    maxPerDay: z.number().int().min(1, 'maxPerDay must be at least 1 (disable the rule to stop it)').max(1000).optional().describe('at most this many firings per target in any 24 hours (default 4)'),
    capture: WatchCaptureSchema.optional(),
    enabled: z.boolean().optional().describe('false: created paused (default true)'),
    reason: z.string().max(1000).optional().describe('recorded as the reason of every capture it makes'),
    profile: ProfileSettingSchema.optional().describe('also keep a continuous allocation profile of every target the rule watches (every, samplingIntervalBytes); a node-pid target gets none'),
  })
  .meta(EXACTLY_ONE)
  .superRefine((s, ctx) => {
    if ((s.target === undefined) === (s.selector === undefined)) {
      ctx.addIssue({ code: 'custom', path: [s.target === undefined ? 'target' : 'selector'], message: 'give exactly one of target (an id) or selector (labels)' });
    }
  });
export type WatchRuleSpec = z.infer<typeof WatchRuleSpecSchema>;

export const DEFAULT_COOLDOWN_SECONDS = 1800;
export const DEFAULT_MAX_PER_DAY = 4;

/** A stored rule: the spec with defaults applied, its owner and times. */
export const WatchRuleSchema = z.strictObject({
  id: IdSchema,
  target: IdSchema.optional(),
  selector: SelectorSchema.optional(),
  when: WatchWhenSchema,
  cooldownSeconds: z.number().int().min(0),
  maxPerDay: z.number().int().min(1),
  capture: WatchCaptureSchema,
  enabled: z.boolean(),
  reason: z.string().optional(),
  /** A continuous allocation profile of the targets it watches (profile-setting.ts). */
  profile: ProfileSettingSchema.optional(),
  owner: z.string(),
  /** Where it is declared: `file` (HEAPCAP_RULES_FILE; changed only there) or `api`. Missing = `api` (stored before sources existed). */
  source: z.enum(RULE_SOURCES).optional(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export type WatchRule = z.infer<typeof WatchRuleSchema>;

export { WatchSampleSchema, type WatchSample } from './sample.ts';

/**
 * How a rule's turn at firing ended (`heapcap_watch_firings_total{outcome}`):
 * `captured` a snapshot was requested; `refused_headroom` the gate refused it;
 * `sampled` a sampling profile was taken instead; `suppressed_cooldown` the
 * condition held again during the cooldown; `suppressed_cap` maxPerDay was
 * reached; `failed` the capture could not be requested or failed otherwise.
 */
export const FIRING_OUTCOMES = ['captured', 'refused_headroom', 'sampled', 'suppressed_cooldown', 'suppressed_cap', 'failed'] as const;
export type FiringOutcome = (typeof FIRING_OUTCOMES)[number];

/**
 * A rule's state for one target: `ok` the condition does not hold; `pending`
 * it holds, for less than forSeconds; `firing` the rule fired in this episode
 * (the condition still holds); `cooling` the episode ended and the cooldown
 * has not passed.
 */
export const WATCH_STATES = ['ok', 'pending', 'firing', 'cooling'] as const;
export type WatchStateName = (typeof WATCH_STATES)[number];

/** The last firing of a rule for a target. */
export const FiringSchema = z.strictObject({
  at: z.iso.datetime(),
  outcome: z.enum(FIRING_OUTCOMES),
  /** The snapshot capture it requested (absent when suppressed). */
  captureId: z.string().optional(),
  /** The sampling profile taken when the gate refused the snapshot. */
  samplingCaptureId: z.string().optional(),
  /** The sample that made it fire. */
  sample: WatchSampleSchema,
  /** The metric's value then. */
  value: z.number(),
  message: z.string().optional(),
});
export type Firing = z.infer<typeof FiringSchema>;

/** One rule × target state, as stored and shown by GET /v1/watch-rules/:id. */
export const WatchTargetStateSchema = z.strictObject({
  targetId: z.string(),
  state: z.enum(WATCH_STATES),
  /** When the current state began (ms). */
  since: z.number().int(),
  /** The last firing's time (ms), for the cooldown. */
  firedAt: z.number().int().nullable(),
  /** A cooldown suppression was already counted in this episode. */
  suppressedThisEpisode: z.boolean().default(false),
  /** The metric's value at the last sample (null: the target does not report it). */
  value: z.number().nullable(),
  lastSampleAt: z.number().int().nullable(),
  lastFiring: FiringSchema.nullable(),
});
export type WatchTargetState = z.infer<typeof WatchTargetStateSchema>;
