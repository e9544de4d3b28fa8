/** cancelCapture: queued → cancelled at once; running → the worker holding it is told to abort. */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { finishedIncrements } from './finished-metrics.ts';
import { CANCEL_SCRIPT } from './lua-captures.ts';
import { getCapture } from './records.ts';
import { replyStrings } from './script.ts';
import type { CaptureRecord } from './schemas.ts';

/**
 * - `cancelled`: it was queued; now cancelled and its job removed.
 * - `cancelling`: it is running; its worker aborts it (record becomes `cancelled` shortly; waitForCapture to see it).
 * - `finished`: it had already ended (the API deletes the artifact of a finished capture instead).
 * - `not_found`: no such capture.
 */
export type CancelOutcome = 'cancelled' | 'cancelling' | 'finished' | 'not_found';

export interface CancelResult {
  outcome: CancelOutcome;
  /** The record after the change (null when not found). */
  record: CaptureRecord | null;
}

/** Cancel capture `id`; see CancelOutcome. */
export async function cancelCapture(ctx: QueueContext, id: string): Promise<CancelResult> {
  const { keys } = ctx;
  const [hash, placement] = await withRedisDeadline(ctx.redis.hmget(keys.record(id), 'targetId', 'placement'), ctx.settings.redisTimeoutMs, 'cancelCapture');
  if (hash === null || hash === undefined) return { outcome: 'not_found', record: null };
  const now = new Date().toISOString();
  const error = JSON.stringify({ code: 'cancelled', message: 'cancelled before it started' });
  const reply = replyStrings(
    await withRedisDeadline(
      CANCEL_SCRIPT.run(
        ctx.redis,
        [keys.record(id), keys.active(hash), ...keys.statusIndexes(), keys.finishedMetrics()],
        [now, keys.doneChannel(), keys.cancelChannel(), error, finishedIncrements({ status: 'cancelled', errorCode: 'cancelled', timings: null, bytes: null })[0]![0]],
      ),
      ctx.settings.redisTimeoutMs,
      'cancelCapture',
    ),
  );
  const outcome = reply[0] === 'missing' ? 'not_found' : (reply[0] as CancelOutcome);
  if (outcome === 'cancelled') {
    // Fails quietly when a worker has just locked the job: that worker finds the record
    // cancelled when it tries to start the attempt, and does nothing.
    await ctx.queueFor(placement).remove(id).catch(() => 0);
  }
  return { outcome, record: await getCapture(ctx, id) };
}
