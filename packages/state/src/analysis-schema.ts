/**
 * What the heap analysis adds to a capture record: `growth` (scheduled
 * captures) and the state of a retained-size `analysis` job, plus that job's
 * payload. The shapes mirror @heapcap/analysis's growth entries; the record is
 * the contract, so they are declared here.
 */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';

/** One class that grew: count and self-size deltas (bytes), retained too where both captures were analysed. */
export const GrowthClassSchema = z.strictObject({
  name: z.string(),
  countDelta: z.number(),
  selfSizeDelta: z.number(),
  retainedSizeDelta: z.number().optional(),
});

/** One leak suspect of `growth` (a diff's suspect without its path: GET /v1/diff has the rest). */
export const GrowthSuspectSchema = z.strictObject({
  rank: z.number().int().positive(),
  class: z.string(),
  countDelta: z.number(),
  selfSizeDelta: z.number(),
  retainedSizeDelta: z.number().optional(),
  /** One line: how many, how much, and who holds them (`holder unknown` when summary-only). */
  reason: z.string(),
  /**
   * With `allocations`: the grown site that constructs the class (a frame of its name in the grown stacks of the
   * profiles beside both snapshots), as GET /v1/diff's suspects word it (`allocated at …`); absent when none does.
   */
  allocated: z.string().optional(),
});

/**
 * `growth` of a capture record: the suspects (first: what a person should
 * look at), then the top classes grown since the capture `since` (null: no
 * earlier capture with a summary). Records written before suspects have none.
 */
export const GrowthSchema = z.strictObject({
  suspects: z
    .strictObject({
      /** `summary`: from class counts only, no holders (`note` says what to ask for); `graph`: from both captures' analyses. */
      mode: z.enum(['graph', 'summary']),
      note: z.string().optional(),
      items: z.array(GrowthSuspectSchema),
    })
    .optional(),
  since: IdSchema.nullable(),
  classes: z.array(GrowthClassSchema),
  /**
   * When both snapshots have a continuous profile stored beside them: the allocation sites whose live bytes grew
   * most between those two profiles (`base`, `head`: the profile captures). Added when the new snapshot's profile
   * is stored, a few seconds after the rest of `growth`.
   */
  allocations: z
    .strictObject({
      base: IdSchema,
      head: IdSchema,
      grown: z.array(
        z.strictObject({ functionName: z.string(), url: z.string(), line: z.number().int(), column: z.number().int(), baseBytes: z.number(), headBytes: z.number(), bytesDelta: z.number() }),
      ),
    })
    .optional(),
});
export type Growth = z.infer<typeof GrowthSchema>;

export const ANALYSIS_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

/** `analysis` of a capture record: the retained-size analysis job and, once done, the key of `<captureId>.analysis.json`. */
export const AnalysisStateSchema = z.strictObject({
  status: z.enum(ANALYSIS_STATUSES),
  requestedBy: z.string(),
  requestedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().optional(),
  key: z.string().optional(),
  /** `offset`: for `snapshot_invalid`, the byte of snapshot JSON where parsing failed. */
  error: z.strictObject({ code: z.string(), message: z.string(), hint: z.string().optional(), offset: z.number().int().nonnegative().optional() }).optional(),
});
export type AnalysisState = z.infer<typeof AnalysisStateSchema>;

/** The BullMQ payload of the `analysis` job. */
export const AnalysisJobSchema = z.strictObject({ captureId: IdSchema });
export type AnalysisJob = z.infer<typeof AnalysisJobSchema>;

/** Queue and job name of the analysis jobs (a queue of their own: they need memory, not a target). */
export const ANALYSIS_QUEUE = 'heapcap-analyses';
export const ANALYSIS_JOB = 'analysis';
