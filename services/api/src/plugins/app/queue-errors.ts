/** Maps the queue layer's errors to API errors (stable codes, no internals on 5xx). */
import { isQueueError } from '@heapcap/state';
import { ApiError, validationFailed } from '../../errors.ts';

/** Runs `fn`, translating QueueErrors; anything else propagates to the error handler (→ internal). */
export async function fromQueue<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translateQueueError(err);
  }
}

/** The ApiError for a QueueError, or `err` unchanged. */
export function translateQueueError(err: unknown): unknown {
  if (!isQueueError(err)) return err;
  switch (err.code) {
    case 'target_not_found':
      return new ApiError('target_not_found', err.message, { targetId: err.details?.['targetId'] });
    case 'idempotency_key_reused':
      return new ApiError('idempotency_key_reused', err.message, { captureId: err.details?.['captureId'] });
    case 'invalid_cursor':
      return validationFailed([{ in: 'querystring', path: 'cursor', message: 'not a cursor this server returned' }]);
    case 'invalid_input': {
      const issues = (err.details?.['issues'] ?? []) as { path: string; message: string }[];
      return validationFailed(issues.length > 0 ? issues.map((i) => ({ in: 'body', path: i.path, message: i.message })) : [{ in: 'body', path: '', message: err.message }]);
    }
    case 'redis_unavailable':
      return new ApiError('unavailable', 'the queue (Redis) is unavailable; retry later (with the same Idempotency-Key)');
    default:
      return err;
  }
}
