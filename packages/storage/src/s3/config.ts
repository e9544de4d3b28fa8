/**
 * Typed configuration of the S3 sink. The mapping from environment variables
 * (HEAPCAP_STORAGE, HEAPCAP_S3_ENDPOINT, …) lives in packages/config; this
 * file only says what a valid sink configuration is and what its defaults are.
 */
import { z } from 'zod';
import { bucketProblem, defaultS3QueueSize, S3_STORAGE_CLASSES } from '@heapcap/config';
import { CaptureError } from '@heapcap/errors';

const MiB = 1024 * 1024;

/** S3's smallest part size (every part but the last). */
export const S3_MIN_PART_SIZE = 5 * MiB;

// The bucket name rules and the accepted storage classes are @heapcap/config's:
// one definition for the environment variables and the store.
const bucketName = z.string().superRefine((bucket, ctx) => {
  const problem = bucketProblem(bucket);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `not a valid S3 bucket name (${problem})` });
});

const credentialsSchema = z
  .object({
    accessKeyId: z.string().min(1),
    secretAccessKey: z.string().min(1),
    sessionToken: z.string().min(1).optional(),
  })
  .strict();

const sseSchema = z.discriminatedUnion('kind', [
  // SSE-S3: the store's own keys. MinIO needs a KMS configured even for this.
  z.object({ kind: z.literal('AES256') }).strict(),
  z.object({ kind: z.literal('aws:kms'), kmsKeyId: z.string().min(1) }).strict(),
]);

const retrySchema = z
  .object({
    /** Attempts per S3 request, the first included. */
    maxAttempts: z.number().int().min(1).max(100).default(20),
    /** First backoff delay; doubles per retry (with jitter) up to maxDelayMs. */
    baseDelayMs: z.number().int().min(1).default(200),
    maxDelayMs: z.number().int().min(1).default(5000),
    /**
     * How long one request keeps retrying transient failures (5xx, throttling,
     * connection refused/reset, timeouts), from its first attempt. A store that
     * is out for longer fails the put with `storage_unavailable`.
     */
    budgetMs: z.number().int().min(1).default(60_000),
    /**
     * The same budget for the preflight check and for cleanup (abort/delete):
     * short, so a dead store is reported before the target is paused.
     */
    checkBudgetMs: z.number().int().min(1).default(10_000),
  })
  .strict();

const timeoutsSchema = z
  .object({
    /** TCP connect. A black-holed endpoint fails (and is retried) after this. */
    connectMs: z.number().int().min(1).default(3000),
    /**
     * Socket inactivity. A paused store (SIGSTOP, GC pause, overloaded node)
     * is waited for this long before the request is retried.
     */
    idleMs: z.number().int().min(1).default(15_000),
    /** Whole request, as a last resort: one 8 MiB part at ≥ 100 KiB/s fits. */
    requestMs: z.number().int().min(1).default(120_000),
  })
  .strict();

/** Schema of the S3 sink configuration (input: what a user writes; output: with defaults applied). */
export const s3SinkConfigSchema = z
  .object({
    /** Present when the config comes from @heapcap/config's StorageConfig union; ignored. */
    kind: z.literal('s3').optional(),
    bucket: bucketName,
    /** Key prefix without leading/trailing slashes ('' = bucket root). */
    prefix: z
      .string()
      .default('')
      .transform((p) => p.replace(/^\/+|\/+$/g, '')),
    /** S3-compatible endpoint (MinIO), e.g. `http://127.0.0.1:9000`. Unset = AWS. */
    endpoint: z.url({ protocol: /^https?$/ }).optional(),
    /** Unset: us-east-1 when an endpoint is set, else the AWS chain (AWS_REGION, ~/.aws/config). */
    region: z.string().min(1).optional(),
    /** Path-style URLs (`endpoint/bucket/key`). Unset: on when an endpoint is set (MinIO), else off. */
    forcePathStyle: z.boolean().optional(),
    /** Unset: the default AWS credential chain (AWS_ACCESS_KEY_ID, profiles, IMDS, …). */
    credentials: credentialsSchema.optional(),
    sse: sseSchema.optional(),
    storageClass: z.enum(S3_STORAGE_CLASSES).optional(),
    /** Multipart part size; the sink holds at most (queueSize + 1) part buffers of this size, reused (see s3/upload.ts). */
    partSizeBytes: z
      .number()
      .int()
      .min(S3_MIN_PART_SIZE)
      .max(5 * 1024 * MiB)
      .default(8 * MiB),
    /** Parts uploaded concurrently; unset: derived from the part size (@heapcap/config's defaultS3QueueSize). */
    queueSize: z.number().int().min(1).max(16).optional(),
    retry: retrySchema.prefault({}),
    timeouts: timeoutsSchema.prefault({}),
  })
  .strict()
  .transform(({ kind: _kind, ...c }) => ({
    ...c,
    queueSize: c.queueSize ?? defaultS3QueueSize(c.partSizeBytes),
    region: c.region ?? (c.endpoint !== undefined ? 'us-east-1' : undefined),
    forcePathStyle: c.forcePathStyle ?? c.endpoint !== undefined,
  }));

/** What a caller writes (defaults optional; storageClass is checked at parse time). */
export type S3SinkConfigInput = Omit<z.input<typeof s3SinkConfigSchema>, 'storageClass'> & {
  storageClass?: string | undefined;
};
/** The parsed configuration the sink runs with. */
export type S3SinkConfig = z.output<typeof s3SinkConfigSchema>;

/** Splits `s3://bucket/some/prefix` into bucket and prefix (no slashes at either end). */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/?#]+)(?:\/([^?#]*))?$/.exec(url.trim());
  const bucket = match?.[1];
  if (bucket === undefined || bucketProblem(bucket) !== undefined) {
    throw new CaptureError('invalid_input', `not an S3 URL: ${JSON.stringify(url)}`, {
      hint: 'expected s3://BUCKET or s3://BUCKET/PREFIX with a valid bucket name',
    });
  }
  return { bucket, prefix: (match?.[2] ?? '').replace(/^\/+|\/+$/g, '') };
}
