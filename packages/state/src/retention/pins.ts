/** Pins: a pinned capture is never deleted by retention, nor its record by the record TTL. */
import type { QueueContext } from '../context.ts';
import { withRedisDeadline } from '../connection.ts';
import { getCapture } from '../records.ts';
import { replyStrings } from '../script.ts';
import type { CaptureRecord } from '../schemas.ts';
import { PIN_SCRIPT } from './lua.ts';

/**
 * - `ok`: pinned (or unpinned); `record` is the record now.
 * - `not_found`: no such capture.
 * - `expired`: retention already deleted its artifact (nothing left to keep).
 * - `expiring`: retention is deleting its artifact right now; it cannot be kept.
 */
export type PinOutcome = 'ok' | 'not_found' | 'expired' | 'expiring';

/** Pin capture `id` for `by` (a token name) with an optional reason; or unpin it when `pin` is false. */
export async function setPin(ctx: QueueContext, id: string, pin: boolean, by: string, reason?: string): Promise<{ outcome: PinOutcome; record: CaptureRecord | null }> {
  const now = new Date().toISOString();
  const pinned = JSON.stringify({ by, at: now, reason });
  const [word] = replyStrings(await withRedisDeadline(PIN_SCRIPT.run(ctx.redis, [ctx.keys.record(id)], [pinned, now, pin ? '1' : '0']), ctx.settings.redisTimeoutMs, 'pin'));
  const outcome: PinOutcome = word === 'missing' ? 'not_found' : (word as PinOutcome);
  return { outcome, record: outcome === 'not_found' ? null : await getCapture(ctx, id) };
}
