/**
 * Exit codes of the `heapcap` command. Stable: scripts and runbooks branch on them.
 *
 * | code | meaning |
 * |---|---|
 * | 0 | success |
 * | 1 | internal error (a bug: please report it) |
 * | 2 | invalid input: bad flags or configuration |
 * | 3 | target problem: unreachable, not found, closed, busy, permission denied |
 * | 4 | snapshot problem: truncated, invalid, protocol timeout or error |
 * | 5 | storage problem: failed, unavailable, auth, bucket missing |
 * | 6 | refused: insufficient headroom on the target, or a snapshot too large to analyse |
 * | 7 | unavailable: the heapcap API cannot be reached, or its Redis is down, or it sheds load (429): try again later |
 * | 130 | cancelled (SIGINT/SIGTERM) |
 */
import { ERROR_CODES, type ErrorCode } from '@heapcap/errors';

export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  target: 3,
  snapshot: 4,
  storage: 5,
  refused: 6,
  unavailable: 7,
  cancelled: 130,
} as const;

/** The exit code for an error code. */
export function exitCodeFor(code: ErrorCode | 'invalid_config'): number {
  switch (code) {
    case 'invalid_input':
    case 'invalid_config':
      return EXIT.usage;
    case 'target_unreachable':
    case 'target_not_found':
    case 'target_ambiguous':
    case 'target_not_node':
    case 'target_closed':
    case 'target_busy':
    case 'target_lock_lost':
    case 'permission_denied':
      return EXIT.target;
    case 'snapshot_truncated':
    case 'snapshot_invalid':
    case 'snapshot_ids_reset':
    case 'profile_invalid':
    case 'sampler_not_running':
    case 'protocol_timeout':
    case 'protocol_error':
      return EXIT.snapshot;
    case 'storage_failed':
    case 'storage_unavailable':
    case 'storage_auth_failed':
    case 'storage_bucket_missing':
      return EXIT.storage;
    case 'insufficient_headroom':
    case 'analysis_too_large':
    case 'allocations_unsupported':
      return EXIT.refused;
    case 'cancelled':
      return EXIT.cancelled;
    case 'internal':
    // Only the API's captures meet it (the CLI's own captures keep no state in Redis): like internal, heapcap's side failed.
    case 'redis_data_lost':
      return EXIT.internal;
  }
}

/** The exit code for an error code read from the API (a record's, a job's): its own when it is one of ours, else internal. */
export function exitCodeForApiError(code: string | undefined): number {
  return code !== undefined && (ERROR_CODES as readonly string[]).includes(code) ? exitCodeFor(code as ErrorCode) : EXIT.internal;
}
