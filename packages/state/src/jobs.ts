/** The BullMQ `capture` job: one per capture, jobId = capture id. */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { CAPTURE_JOB } from './schemas.ts';

/**
 * Enqueue (idempotent: BullMQ ignores an add whose jobId exists). Retries: the
 * worker throws UnrecoverableError for codes that must not be retried, so
 * `attempts` only applies to target_unreachable / storage_unavailable.
 */
export async function enqueueCapture(ctx: Pick<QueueContext, 'queueFor' | 'settings'>, captureId: string, targetId: string, placement?: string | null): Promise<void> {
  await withRedisDeadline(
    ctx.queueFor(placement).add(
      CAPTURE_JOB,
      { captureId, targetId },
      {
        jobId: captureId,
        attempts: ctx.settings.attempts,
        backoff: { type: 'exponential', delay: ctx.settings.backoffMs },
        // The record is the history; jobs are kept a while for inspection only.
        removeOnComplete: { age: 24 * 3600, count: 10_000 },
        removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
      },
    ),
    ctx.settings.redisTimeoutMs,
    'enqueue',
  );
}
