/**
 * @heapcap/errors — the one error type every package shares.
 *
 * Typed capture errors with stable codes.
 *
 * Codes are part of the public contract: they appear in capture records, HTTP
 * bodies, logs, Slack messages and CLI output. Match on `code`, never on text.
 */

/** Every stable error code the capture engine and its sinks can produce. */
export const ERROR_CODES = [
  'target_unreachable',
  'target_not_found',
  // A selector (Chromium page pattern) matched several targets and was not told to take the first.
  'target_ambiguous',
  // A node-pid target that does not catch SIGUSR1 (SigCgt in /proc/PID/status): the signal would kill it.
  'target_not_node',
  'target_closed',
  // The target stayed locked by other captures for longer than the caller waits for it (a leak hunt: 2 min).
  // Not retried automatically: the hunt already waited, and trying again is the operator's call.
  'target_busy',
  'protocol_timeout',
  'protocol_error',
  'snapshot_truncated',
  'permission_denied',
  'insufficient_headroom',
  'storage_failed',
  'storage_unavailable',
  'storage_auth_failed',
  'storage_bucket_missing',
  'invalid_input',
  // A heap snapshot file or stream that is not valid snapshot JSON (details.offset: the byte where parsing failed).
  'snapshot_invalid',
  // A leak hunt's target had its heap profiler ids cleared between snapshots (another inspector session
  // closed, or HeapProfiler.disable ran): the ids no longer name the same objects, so no report is made.
  'snapshot_ids_reset',
  // A leak hunt asked to track allocations of a target whose inspector refused HeapProfiler.startTrackingHeapObjects.
  'allocations_unsupported',
  // A file or document that is not a V8 sampling heap profile ({head, samples}: a .heapprofile).
  'profile_invalid',
  // A read of the target's running sampling heap profiler (a continuous profile's) found none running: the session
  // that started it closed (worker gone, target restarted) or a one-off profile stopped it. The holder restarts it.
  'sampler_not_running',
  // An artifact larger than the analysis is allowed to load (HEAPCAP_ANALYSIS_MAX_BYTES).
  'analysis_too_large',
  'cancelled',
  // The worker lost the target's lock (its lease expired, e.g. Redis froze past it): another capture may hold the target now.
  'target_lock_lost',
  // Redis lost its data (a restart without persistence, a failover, FLUSHALL) while the capture was queued or
  // running: its job went with it. The record is written again by the process that still knew it (queue redis-epoch.ts).
  'redis_data_lost',
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Codes worth retrying later: the target or store may come back. Nothing else:
 * a target that closed or truncated its snapshot is in trouble, and retrying
 * would hammer it.
 */
const RETRIABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['target_unreachable', 'storage_unavailable']);

export interface CaptureErrorOptions {
  /** What the operator should check or do next. */
  hint?: string;
  /** Structured, non-secret facts (numbers, names) for records and logs. */
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** An error with a stable code, a human message and a hint for the operator. */
export class CaptureError extends Error {
  override readonly name = 'CaptureError';
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** The capture phase that was running when the error happened (set by the engine). */
  phase: string | undefined;
  /** Phase timings up to the failure (set by the engine). */
  timings: Record<string, number> | undefined;

  constructor(code: ErrorCode, message: string, options: CaptureErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
    this.details = options.details;
    this.phase = undefined;
    this.timings = undefined;
  }

  /** True when retrying later can succeed (never for a dying target or a truncated snapshot). */
  get retriable(): boolean {
    return RETRIABLE.has(this.code);
  }

  toJSON(): { code: ErrorCode; message: string; hint?: string; phase?: string; details?: Record<string, unknown> } {
    return {
      code: this.code,
      message: this.message,
      hint: this.hint,
      phase: this.phase,
      details: this.details,
    };
  }
}

/** True when `err` is a CaptureError, optionally with the given code. */
export function isCaptureError(err: unknown, code?: ErrorCode): err is CaptureError {
  return err instanceof CaptureError && (code === undefined || err.code === code);
}

/** Wrap anything thrown into a CaptureError, keeping CaptureErrors as they are. */
export function toCaptureError(err: unknown, fallback: ErrorCode = 'internal'): CaptureError {
  if (err instanceof CaptureError) return err;
  if (err instanceof Error && err.name === 'AbortError') {
    return new CaptureError('cancelled', 'the capture was cancelled', { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CaptureError(fallback, message, { cause: err });
}
