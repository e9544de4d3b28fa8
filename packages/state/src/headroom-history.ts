/**
 * What the last measured capture of each target cost it: heap used and the
 * extra RSS the snapshot took (the engine's `peak.actualExtraBytes`). The
 * headroom gate scales it to the heap of the next capture, because the cost
 * follows the heap's shape, which the model (heap bytes only) cannot see
 * (docs/headroom.md, "Heap shape").
 *
 * One hash per target, `<prefix>:hc:headroom:<targetId>`: heapUsedBytes,
 * extraBytes, pid, capturedAt. The worker writes it under the target's lock.
 */
import { z } from 'zod';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';

const num = z.coerce.number().finite().nonnegative();
const RecordSchema = z.object({ heapUsedBytes: num, extraBytes: num, pid: num, capturedAt: z.string() });

/** One measured capture of a target. */
export type HeadroomSample = z.infer<typeof RecordSchema>;

export class HeadroomHistory {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** The recorded sample of a target, or null (none yet, or a record that does not parse). */
  async get(targetId: string): Promise<HeadroomSample | null> {
    const raw = await withRedisDeadline(this.#ctx.redis.hgetall(this.#ctx.keys.headroom(targetId)), this.#ctx.settings.redisTimeoutMs, 'headroom history');
    const parsed = RecordSchema.safeParse(raw);
    return parsed.success ? parsed.data : null;
  }

  /**
   * Record a measured capture. A later capture of the same process costs less
   * (the allocator keeps the first snapshot's memory), so a sample from the
   * process already recorded only replaces it when it costs more per heap byte;
   * a new process (a restart, another replica) always replaces it.
   * Returns whether the record changed.
   */
  async record(targetId: string, sample: HeadroomSample): Promise<boolean> {
    if (!(sample.heapUsedBytes > 0) || !(sample.extraBytes > 0)) return false;
    const prev = await this.get(targetId);
    if (prev !== null && prev.pid === sample.pid && sample.extraBytes / sample.heapUsedBytes <= prev.extraBytes / prev.heapUsedBytes) return false;
    const key = this.#ctx.keys.headroom(targetId);
    const fields = { heapUsedBytes: String(sample.heapUsedBytes), extraBytes: String(sample.extraBytes), pid: String(sample.pid), capturedAt: sample.capturedAt };
    await withRedisDeadline(this.#ctx.redis.hset(key, fields), this.#ctx.settings.redisTimeoutMs, 'headroom history');
    return true;
  }
}
