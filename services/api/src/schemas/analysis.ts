/** Request and response schemas of the summary, diff and analysis routes (shared with the OpenAPI document). */
import { z } from 'zod';
import { IdSchema, RedactModeSchema } from '@heapcap/config';
import { AnalysisSchema, LeakHuntSchema, ProfileDiffSchema, SummaryDiffSchema, SummarySchema } from '@heapcap/analysis';
import { AnalysisStateSchema, CaptureRecordSchema, HuntDriveSchema, LeakHuntRecordSchema, textSchema } from '@heapcap/state';

/** Most classes a diff answers with (`limit`); the rest are counted in `omittedClasses`. */
export const MAX_DIFF_CLASSES = 10_000;

export const SummaryResponseSchema = z.object({ captureId: IdSchema, targetId: IdSchema, summary: SummarySchema }).describe('CaptureSummary');

export const DiffQuerySchema = z.strictObject({
  base: IdSchema.describe('the earlier capture'),
  head: IdSchema.describe('the later capture'),
  force: z.enum(['true', 'false', '1', '0']).optional().describe('compare captures of different targets (refused with target_mismatch otherwise)'),
  limit: z.coerce.number().int().min(1).max(MAX_DIFF_CLASSES).default(100).describe('classes answered, largest growth first'),
});

const DiffSideSchema = z.object({
  captureId: IdSchema,
  targetId: IdSchema,
  createdAt: z.iso.datetime(),
  /** True when this side's retained-size analysis was used. */
  analysed: z.boolean(),
  /** This side's analysis (`none`: never asked for: POST /v1/captures/{id}/analysis), and where to follow it. */
  analysis: z.object({
    status: z.enum(['none', 'queued', 'running', 'succeeded', 'failed']),
    /** GET this to follow the analysis. */
    poll: z.string(),
    /** `code: message` of a failed analysis (e.g. analysis_too_large above HEAPCAP_ANALYSIS_MAX_BYTES). */
    error: z.string().optional(),
  }),
});

export const DiffResponseSchema = z
  .object({
    base: DiffSideSchema,
    head: DiffSideSchema,
    /** True when the captures are of different targets (`force=true`). */
    forced: z.boolean(),
    /** Classes left out by `limit` (the smallest growth). */
    omittedClasses: z.number().int().nonnegative(),
    /** Null when both captures are allocation sampling profiles (no summaries): `allocations` then. */
    diff: SummaryDiffSchema.nullable(),
    /** Growth by allocation site when both captures have an allocation profile, else null. */
    allocations: ProfileDiffSchema.nullable(),
  })
  .describe('CaptureDiff');

export const AnalysisResponseSchema = z
  .object({
    capture: CaptureRecordSchema,
    /** The analysis job: queued, running, succeeded (then `analysis` is set) or failed (with its error). */
    state: AnalysisStateSchema,
    analysis: AnalysisSchema.nullable(),
  })
  .describe('CaptureAnalysis');

/** Longest interval between a hunt's captures: the target lock is held for two of them. */
export const MAX_HUNT_INTERVAL_SECONDS = 3600;

export const CreateLeakHuntBodySchema = z
  .strictObject({
    target: IdSchema.describe('id of a registered target'),
    interval: z.number().int().min(1).max(MAX_HUNT_INTERVAL_SECONDS).describe('seconds between the baseline, target and final captures'),
    reason: textSchema(1000).optional().describe('why; kept on the hunt'),
    redact: RedactModeSchema.optional().describe(
      '`strings`: the three snapshots have their string values replaced before any byte reaches the worker\'s disk, as a capture\'s `redact`; ' +
        '`none` (or absent): the target\'s `redact`, else HEAPCAP_REDACT. A request can raise redaction, never lower it. The hunt says the mode it ran with in `redaction`',
    ),
    allocations: z
      .boolean()
      .optional()
      .describe(
        'default true: the worker tracks allocations (HeapProfiler.startTrackingHeapObjects) from the baseline to the target snapshot, so each suspect part says where its objects were allocated (`allocatedAt`); ' +
          'it slows the target while it runs (bench/hunt-tracking.ts). `false` turns it off. A target whose V8 cannot track fails the hunt with `allocations_unsupported`',
      ),
    drive: HuntDriveSchema.optional().describe(
      'optional, needs targets:admin: what the worker does to the target after the baseline snapshot, before the interval: ' +
        '`{http: {method, url, headers?, body?, count?}}` (requests one after the other, only to the target\'s own host, redirects not followed) ' +
        'or `{evaluate: "<Runtime expression>"}` (on the hunt\'s session, promises awaited, 30 s deadline); ' +
        '`rounds` (1-20, default 3): the drive runs that many times before the target snapshot and once more before the final one, and a suspect must grow in every round',
    ),
  })
  .describe('CreateLeakHunt');

export const LeakHuntParamsSchema = z.strictObject({ id: IdSchema });

export const LeakHuntListQuerySchema = z.strictObject({
  target: IdSchema.optional().describe('only this target\'s hunts'),
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('hunts answered, newest first'),
});

export const LeakHuntListSchema = z
  .object({
    /** Newest first; each as GET /v1/leak-hunts/{id} has it (`hunt.classes` names what a succeeded hunt found; the full report is on the hunt's own GET). */
    items: z.array(LeakHuntRecordSchema),
  })
  .describe('LeakHuntList');

export const LeakHuntResponseSchema = z
  .object({
    hunt: LeakHuntRecordSchema,
    /** The three-snapshot report, once the hunt succeeded. */
    report: LeakHuntSchema.nullable(),
  })
  .describe('LeakHuntResponse');
