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
import { LuaScript } from './script.ts';

/**
 * Replace the sample unless the recorded one (complete: all three numbers) is of the same process and costs as
 * much or more per heap byte.
 * KEYS: 1 the target's headroom hash. ARGV: 1 heapUsedBytes, 2 extraBytes, 3 pid, 4 capturedAt. Reply: 1 written, 0 kept.
 */
const RECORD_SCRIPT = new LuaScript(`
local prev = redis.call('HMGET', KEYS[1], 'heapUsedBytes', 'extraBytes', 'pid', 'capturedAt')
local ph, pe = tonumber(prev[1]), tonumber(prev[2])
if ph and pe and prev[4] and tonumber(prev[3]) == tonumber(ARGV[3]) and tonumber(ARGV[2]) / tonumber(ARGV[1]) <= pe / ph then return 0 end
redis.call('HSET', KEYS[1], 'heapUsedBytes', ARGV[1], 'extraBytes', ARGV[2], 'pid', ARGV[3], 'capturedAt', ARGV[4])
return 1
`);

const num = z.coerce.number().finite().nonnegative();
const RecordSchema = z.object({ heapUsedBytes: num, extraBytes: num, pid: num, capturedAt: z.string() });

/** One measured capture of a target. */
export type HeadroomSample = z.infer<typeof RecordSchema>;

/** The sample stored in a target's headroom hash (its HGETALL), or null (none, or one that does not parse). */
export function parseHeadroomSample(hash: Record<string, string>): HeadroomSample | null {
  const parsed = RecordSchema.safeParse(hash);
  return parsed.success ? parsed.data : null;
}

export class HeadroomHistory {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** The recorded sample of a target, or null (none yet, or a record that does not parse). */
  async get(targetId: string): Promise<HeadroomSample | null> {
    return parseHeadroomSample(await withRedisDeadline(this.#ctx.redis.hgetall(this.#ctx.keys.headroom(targetId)), this.#ctx.settings.redisTimeoutMs, 'headroom history'));
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
    // One round trip: the comparison with the recorded sample runs in Redis (it was a read, then a write).
    const reply = await withRedisDeadline(
      RECORD_SCRIPT.run(this.#ctx.redis, [this.#ctx.keys.headroom(targetId)], [String(sample.heapUsedBytes), String(sample.extraBytes), String(sample.pid), sample.capturedAt]),
      this.#ctx.settings.redisTimeoutMs,
      'headroom history',
    );
    return reply === 1;
  }
}
