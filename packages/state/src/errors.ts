/**
 * Errors of the queue layer with stable codes the API maps to HTTP statuses.
 * (Capture failures themselves are CaptureErrors from @heapcap/errors.)
 */

/** Stable codes: match on these, never on message text. */
export const QUEUE_ERROR_CODES = [
  /** The target id is not in the registry (HTTP 404 / 422). */
  'target_not_found',
  /** The Idempotency-Key was used before with a different request (HTTP 422). */
  'idempotency_key_reused',
  /** A list cursor that this server did not produce (HTTP 400). */
  'invalid_cursor',
  /** Input that fails a schema: targets file, target body, filter (HTTP 400). */
  'invalid_input',
  /** A targets file that cannot be read (start-up error). */
  'targets_file_unreadable',
  /** Redis did not answer within the deadline (HTTP 503). */
  'redis_unavailable',
] as const;
export type QueueErrorCode = (typeof QUEUE_ERROR_CODES)[number];

/** An error of the queue layer; `details` holds non-secret facts (field issues, ids). */
export class QueueError extends Error {
  override readonly name = 'QueueError';
  readonly code: QueueErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: QueueErrorCode, message: string, details?: Record<string, unknown>, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.details = details;
  }
}

/** True when `err` is a QueueError, optionally with the given code. */
export function isQueueError(err: unknown, code?: QueueErrorCode): err is QueueError {
  return err instanceof QueueError && (code === undefined || err.code === code);
}
