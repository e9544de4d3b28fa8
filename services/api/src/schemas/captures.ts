/** Request and response schemas of the /v1/captures routes (shared with the OpenAPI document). */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { CAPTURE_STATUSES, CaptureOptionsSchema, CaptureRecordSchema, TriggerSchema, textSchema } from '@heapcap/state';

/** Longest `?wait=`: a runbook's single curl may block this long, no longer. */
export const MAX_WAIT_SECONDS = 600;

export const CaptureParamsSchema = z.strictObject({ id: IdSchema });

export const CreateCaptureBodySchema = z
  .strictObject({
    target: IdSchema.describe('id of a registered target'),
    reason: textSchema(1000).optional().describe('why; recorded in the audit log and the manifest (well-formed Unicode: a lone UTF-16 surrogate is refused)'),
    options: CaptureOptionsSchema.optional(),
    force: z.boolean().default(false).describe('start a new capture even when one of this target is queued or running'),
  })
  .describe('CreateCapture');

export const CreateCaptureQuerySchema = z.strictObject({
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .optional()
    .describe(`block up to this many seconds (max ${MAX_WAIT_SECONDS}) for the capture to finish`),
});

/** Header schemas see every header: keep the unknown ones (loose), check ours. */
export const CreateCaptureHeadersSchema = z.looseObject({
  'idempotency-key': z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, '1-255 printable ASCII characters')
    .optional()
    .describe('the same key (per token) within 24 h returns the same capture'),
});

export const CaptureLinksSchema = z.object({
  self: z.string(),
  artifact: z.string(),
  cancel: z.string(),
});

export const CaptureResponseSchema = z
  .object({
    capture: CaptureRecordSchema,
    /** True when this request joined a capture that was already queued or running. */
    coalesced: z.boolean(),
    /** True when an Idempotency-Key replay returned an earlier request's capture. */
    replayed: z.boolean(),
    links: CaptureLinksSchema,
  })
  .describe('CaptureResponse');

const isoDateTime = z.iso.datetime({ offset: true });

export const ListCapturesQuerySchema = z.strictObject({
  target: IdSchema.optional(),
  status: z.enum(CAPTURE_STATUSES).optional(),
  trigger: TriggerSchema.shape.kind.optional().describe('trigger kind'),
  kind: z.enum(['snapshot', 'sampling']).optional().describe('what the capture takes: snapshot (a heap snapshot) or sampling (an allocation sampling profile)'),
  since: isoDateTime.optional().describe('created at or after (ISO 8601)'),
  until: isoDateTime.optional().describe('created before (ISO 8601)'),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(512).optional().describe('nextCursor of the previous page'),
});

export const ListCapturesResponseSchema = z.object({
  items: z.array(CaptureRecordSchema),
  nextCursor: z.string().nullable(),
});

export const ArtifactQuerySchema = z.strictObject({
  encoding: z.enum(['gzip', 'identity']).optional().describe('gzip: the stored .gz bytes; default: decompressed JSON'),
  redirect: z.enum(['0', '1', 'true', 'false']).optional().describe('1: redirect to a presigned URL (S3 storage only)'),
});

export const DeleteCaptureResponseSchema = z.object({
  capture: CaptureRecordSchema,
  /** cancelled: was queued; cancelling: running, the worker stops it; deleted: artifact removed; finished: nothing to do. */
  result: z.enum(['cancelled', 'cancelling', 'artifact_deleted', 'finished']),
});
