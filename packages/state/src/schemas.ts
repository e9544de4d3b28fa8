/**
 * The shared contract between the api (producer) and the worker (consumer):
 * targets, capture options, triggers, job payloads and capture records.
 * Every boundary parses with these schemas; unknown fields are rejected.
 */
import { z } from 'zod';
import { IdSchema, RedactModeSchema } from '@heapcap/config';
import { TargetSchema } from './target-schema.ts';

import { AnalysisStateSchema, GrowthSchema } from './analysis-schema.ts';
import { WatchSampleSchema } from './watch/sample.ts';

export { LabelNameSchema, LabelValueSchema, TargetSchema, buildTargetSchema, type Target } from './target-schema.ts';

/** The targets file (YAML or JSON). */
export const TargetsFileSchema = z.strictObject({ targets: z.array(TargetSchema).default([]) });

/** What a caller may ask of one capture. */
export const CaptureOptionsSchema = z.strictObject({
  warm: z.enum(['auto', 'always', 'never']).default('auto'),
  gc: z.boolean().default(false),
  gzip: z.boolean().default(true),
  exposeInternals: z.boolean().default(false),
  captureNumericValue: z.boolean().default(false),
  /** Take the capture even when the headroom gate refuses it (recorded as forced). */
  forceHeadroom: z.boolean().default(false),
  /**
   * `snapshot`: a heap snapshot (what holds memory); `sampling`: an allocation sampling profile
   * (`.heapprofile`, where memory is allocated) over `samplingSeconds`, without the headroom gate.
   */
  kind: z.enum(['snapshot', 'sampling']).default('snapshot'),
  /** Sampling only: how long to sample, in seconds. */
  samplingSeconds: z.number().int().min(1).max(600).default(30),
  /** Sampling only: average bytes allocated between two samples (V8's default 32768; smaller is finer and costs the target more). */
  samplingIntervalBytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(32_768),
  /**
   * Sampling only: read the sampler already running in the target (a continuous profile's) at once, without starting
   * or stopping it; `sampler_not_running` when none runs. Set by the watcher's reads (trigger kind `profile`).
   */
  readRunning: z.boolean().optional(),
  /**
   * Snapshot only: `strings` replaces every string value before any byte is stored; absent or
   * `none`: the target's setting, else HEAPCAP_REDACT (a request can raise redaction, never lower it).
   */
  redact: RedactModeSchema.optional(),
});
export type CaptureOptions = z.infer<typeof CaptureOptionsSchema>;

/** Who asked for a capture, and why. */
export const TriggerSchema = z.strictObject({
  kind: z.enum(['rest', 'slack', 'schedule', 'watch', 'cli', 'profile']),
  /** Token name, Slack user, schedule id… never a secret. */
  who: z.string().min(1).max(200),
  reason: z.string().max(1000).optional(),
  /** Client address for REST triggers. */
  from: z.string().max(100).optional(),
  /** The schedule that made this capture (kind `schedule`); `who` is then the schedule's owner. */
  scheduleId: IdSchema.optional(),
  /** The watch rule that fired (kind `watch`). */
  ruleId: IdSchema.optional(),
  /** The sample that made the rule fire, and the metric's value then (kind `watch`). */
  sample: WatchSampleSchema.extend({ metric: z.string(), value: z.number() }).optional(),
  /** The samples of the minutes that led to it: GET /v1/targets/:id/samples?since=&until= (kind `watch`). */
  samples: z.strictObject({ since: z.iso.datetime(), until: z.iso.datetime(), href: z.string() }).optional(),
  /** The snapshot this sampling profile replaces (the headroom gate refused it). */
  fallbackOf: z.string().max(100).optional(),
  /**
   * Kind `profile`: a read of the target's continuous allocation profile (docs/watch.md). `since`: when the sampler
   * now running started (allocations before it have no stack); `gap`: the time no sampler ran before it (a worker
   * restart or handover, a target restart, a one-off profile that stopped it), absent when there was none.
   */
  profile: z
    .strictObject({
      since: z.iso.datetime(),
      samplingIntervalBytes: z.number().int().positive(),
      gap: z.strictObject({ from: z.iso.datetime(), to: z.iso.datetime(), reason: z.string().max(200) }).optional(),
    })
    .optional(),
  /** Kind `profile`: the snapshot this profile was stored beside. */
  besideOf: z.string().max(100).optional(),
});
export type Trigger = z.infer<typeof TriggerSchema>;

/**
 * `expired`: succeeded, and retention has since deleted its artifact (the
 * record stays, saying who deleted it, when and why, until the record TTL).
 */
export const CAPTURE_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'] as const;
export type CaptureStatus = (typeof CAPTURE_STATUSES)[number];

/** The BullMQ job payload of the `capture` job (jobId = captureId). */
export const CaptureJobSchema = z.strictObject({
  captureId: IdSchema,
  targetId: IdSchema,
});
export type CaptureJob = z.infer<typeof CaptureJobSchema>;

/** Name of the capture job and queue. */
export const CAPTURE_QUEUE = 'heapcap-captures';
export const CAPTURE_JOB = 'capture';

/**
 * Milliseconds per phase (the engine's PHASES, plus `queued` and `total`). A
 * record, not a fixed object: records written before a phase existed (e.g.
 * `enable`) or after one was added still parse.
 */
const Timings = z.record(z.string(), z.number());

/** A capture record, as stored in Redis and returned by the API. */
export const CaptureRecordSchema = z.strictObject({
  id: IdSchema,
  targetId: IdSchema,
  labels: z.record(z.string(), z.string()),
  trigger: TriggerSchema,
  options: CaptureOptionsSchema,
  status: z.enum(CAPTURE_STATUSES),
  /** The phase running now, or the one that failed. */
  phase: z.string().nullable(),
  /**
   * While an attempt runs: its phase, when the phase began and when this was
   * written (both the worker's clock), and the snapshot bytes received so far
   * (`serialize`; written at most once a second). `heapcap trigger --wait`
   * shows it; absent once the attempt ended and in records written before it.
   */
  progress: z
    .strictObject({
      phase: z.string(),
      phaseStartedAt: z.iso.datetime(),
      at: z.iso.datetime(),
      bytes: z.number().int().nonnegative(),
    })
    .optional(),
  error: z
    .strictObject({
      code: z.string(),
      message: z.string(),
      hint: z.string().optional(),
      phase: z.string().optional(),
      /**
       * After a failure that may have left the target busy (a timeout, or a stop
       * mid-snapshot), the worker kept the target lock until the target answered
       * again: `idle` it did, `gone` it cannot be reached, `busy` the bound passed.
       */
      settle: z.strictObject({ outcome: z.enum(['idle', 'gone', 'busy']), waitedMs: z.number().nonnegative() }).optional(),
    })
    .nullable(),
  timings: Timings.nullable(),
  artifact: z
    .strictObject({
      key: z.string(),
      manifestKey: z.string(),
      location: z.string(),
      bytesUncompressed: z.number(),
      bytesStored: z.number(),
      sha256: z.string(),
      gzip: z.boolean(),
      /** `sampling-profile`: a `.heapprofile` (no summary, no analysis, no diff). Absent: a snapshot (records written before sampling profiles). */
      kind: z.enum(['snapshot', 'sampling-profile']).optional(),
      /** `<captureId>.summary.json` beside the snapshot (GET /v1/captures/:id/summary). Absent: no summary (see `summaryError`) or captured before summaries. */
      summaryKey: z.string().optional(),
      /** Why the capture has no summary (it never fails the capture): `code: message`. */
      summaryError: z.string().optional(),
    })
    .nullable(),
  attempts: z.number().int().min(0),
  /**
   * The attempts that failed and were retried (a count stays in `attempts`, which the record scripts
   * increment atomically): each one's number of `of`, its error, when it started and failed, and when
   * BullMQ's backoff runs the next (null: no retry followed). `heapcap trigger --wait` shows them while
   * the capture waits for its retry. Absent until an attempt is retried, and in records written before it.
   */
  failedAttempts: z
    .array(
      z.strictObject({
        attempt: z.number().int().min(1),
        of: z.number().int().min(1),
        code: z.string(),
        message: z.string(),
        phase: z.string().optional(),
        startedAt: z.iso.datetime(),
        failedAt: z.iso.datetime(),
        nextAttemptAt: z.iso.datetime().nullable(),
      }),
    )
    .optional(),
  /** Kept by retention and the record TTL until unpinned (POST/DELETE /v1/captures/:id/pin). */
  pinned: z
    .strictObject({
      by: z.string(),
      at: z.iso.datetime(),
      reason: z.string().optional(),
    })
    .nullable(),
  /** Set when retention deleted the artifact (status `expired`): when, by whom, why, and which key. */
  expired: z
    .strictObject({
      at: z.iso.datetime(),
      by: z.string(),
      /** `keepLast` (beyond the newest N of its schedule) or `maxAge`. */
      reason: z.enum(['keepLast', 'maxAge']),
      key: z.string(),
      scheduleId: z.string().optional(),
    })
    .nullable(),
  /** Scheduled captures: the classes that grew most since the previous finished capture of the target (set by the worker after the summary). */
  growth: GrowthSchema.optional(),
  /** A snapshot of a target with a continuous profile: the profile capture stored beside it (its trigger has `besideOf`). */
  profileCaptureId: z.string().optional(),
  /** The retained-size analysis (POST /v1/captures/:id/analysis); absent until one is asked for. */
  analysis: AnalysisStateSchema.optional(),
  /**
   * How the stored snapshot was redacted: the mode it ran with (the request's, raised by the target's
   * `redact` and HEAPCAP_REDACT: a target's `strings` with a request's `none` says `strings` here, while
   * `options.redact` keeps what was asked), and with `strings` the manifest's counts. Set when a snapshot
   * capture succeeds; absent on sampling profiles and on records written before issue 41.
   */
  redaction: z
    .strictObject({
      mode: RedactModeSchema,
      marker: z.string().optional(),
      redactedStrings: z.number().int().nonnegative().optional(),
      keptStrings: z.number().int().nonnegative().optional(),
      redactedBytes: z.number().int().nonnegative().optional(),
      rewrittenNames: z.number().int().nonnegative().optional(),
    })
    .optional(),
  /** How many requests joined this capture while it was queued or running. */
  coalesced: z.number().int().min(0),
  /**
   * Set when the janitor wrote this record again from the capture's stored manifest after Redis lost the
   * record with its data (docs/operations.md, "Redis restarted without its data"): who asked and why are
   * the manifest's, pins and analyses went with the data.
   */
  adoptedAt: z.iso.datetime().optional(),
  /**
   * True when Redis lost its data while this capture was queued and the API process that accepted it queued it
   * again (same id and trigger; docs/operations.md, "Redis restarted without its data"). Absent otherwise.
   */
  requeuedAfterDataLoss: z.boolean().optional(),
  /** The id of the worker that ran (or runs) the last attempt (GET /v1/workers); absent until one started it. */
  worker: z.string().optional(),
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().nullable(),
  finishedAt: z.iso.datetime().nullable(),
  updatedAt: z.iso.datetime(),
});
export type CaptureRecord = z.infer<typeof CaptureRecordSchema>;
