/**
 * Maps what the AWS SDK throws to the stable storage error codes. Matches on
 * the S3 error code (`err.name`), the HTTP status and Node's `err.code`,
 * never on message text.
 */
import { CaptureError } from '@heapcap/errors';

/** Where an S3 request went, for messages an operator can act on. */
export interface S3ErrorContext {
  /** What the sink was doing: 'check', 'put', 'manifest', 'remove', 'read', 'presign', 'cleanup'. */
  op: string;
  bucket: string;
  /** Endpoint URL, or undefined for AWS. */
  endpoint: string | undefined;
  key?: string;
}

const AUTH_CODES = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidToken',
  'ExpiredToken',
  'TokenRefreshRequired',
  // No credentials anywhere in the AWS chain.
  'CredentialsProviderError',
]);

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

const UNAVAILABLE_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'SlowDown', 'ServiceUnavailable', 'InternalError']);

// The statuses the SDK retries as transient, plus throttling. Not 501
// (NotImplemented, e.g. SSE on a MinIO without KMS): that is a configuration error.
const UNAVAILABLE_STATUS = new Set([429, 500, 502, 503, 504]);

interface SdkLike {
  name?: unknown;
  code?: unknown;
  cause?: unknown;
  errors?: unknown;
  $metadata?: { httpStatusCode?: number; attempts?: number };
}

/** Node network error code found on the error, its causes or (AggregateError) its parts. */
export function networkCode(err: unknown, depth = 0): string | undefined {
  if (typeof err !== 'object' || err === null || depth > 8) return undefined;
  const e = err as SdkLike;
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return e.code;
  if (Array.isArray(e.errors)) {
    for (const part of e.errors) {
      const code = networkCode(part, depth + 1);
      if (code !== undefined) return code;
    }
  }
  return networkCode(e.cause, depth + 1);
}

function where(ctx: S3ErrorContext): string {
  const target = `s3://${ctx.bucket}${ctx.key === undefined ? '' : `/${ctx.key}`}`;
  return ctx.endpoint === undefined ? target : `${target} at ${ctx.endpoint}`;
}

/** Turns an SDK/network error into a CaptureError with a storage code, a message naming bucket and endpoint, and a hint. */
export function toStorageError(err: unknown, ctx: S3ErrorContext): CaptureError {
  if (err instanceof CaptureError) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as SdkLike;
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const status = e.$metadata?.httpStatusCode;
  const net = networkCode(err);
  const details: Record<string, unknown> = {
    op: ctx.op,
    bucket: ctx.bucket,
    endpoint: ctx.endpoint,
    key: ctx.key,
    s3Code: net ?? name,
    httpStatus: status,
    attempts: e.$metadata?.attempts,
  };
  const reason = err instanceof Error ? err.message : String(err);
  const opts = { details, cause: err };

  if (name === 'AbortError') {
    return new CaptureError('cancelled', `${ctx.op} on ${where(ctx)} was cancelled`, opts);
  }
  if (AUTH_CODES.has(name) || status === 403 || status === 401) {
    return new CaptureError('storage_auth_failed', `S3 refused the credentials for ${where(ctx)} (${name})`, {
      ...opts,
      hint: 'check the access key and secret (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the configured credentials) and that they may PutObject, DeleteObject and AbortMultipartUpload under the prefix',
    });
  }
  if (name === 'NoSuchBucket') {
    return new CaptureError('storage_bucket_missing', `bucket ${JSON.stringify(ctx.bucket)} does not exist (${where(ctx)})`, {
      ...opts,
      hint: 'create the bucket, or fix the bucket name in HEAPCAP_STORAGE (s3://BUCKET/PREFIX) and the endpoint/region',
    });
  }
  if (net !== undefined || UNAVAILABLE_NAMES.has(name) || (status !== undefined && UNAVAILABLE_STATUS.has(status))) {
    return new CaptureError('storage_unavailable', `S3 is unreachable or failing at ${where(ctx)} (${net ?? name}): ${reason}`, {
      ...opts,
      hint: 'check that the endpoint (HEAPCAP_S3_ENDPOINT) is right and the store is up; the request was retried until the retry budget ran out',
    });
  }
  return new CaptureError('storage_failed', `S3 ${ctx.op} failed for ${where(ctx)} (${name}): ${reason}`, {
    ...opts,
    hint: 'see details.s3Code; this is not a transient outage, so retrying the capture unchanged will fail the same way',
  });
}

/** True for S3's "the multipart upload is already gone" answer. */
export function isNoSuchUpload(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as SdkLike).name === 'NoSuchUpload';
}
