/**
 * Noticing that Redis lost its data (a restart without persistence, a
 * failover to an empty replica, FLUSHALL): a sentinel key written once when
 * heapcap first meets this Redis. Its absence later means everything heapcap
 * kept there went with it. The first process to notice records when (for
 * `/readyz`) and says so; every process then re-creates what it owns.
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';

/** What goes with Redis's data (said in the log line and in `/readyz`). */
export const LOST_WITH_REDIS = ['schedules', 'watch rules', 'API-registered targets', 'queued captures', 'capture records', 'pins', 'the audit log'] as const;
/** What heapcap re-creates by itself. */
export const RECREATED_AFTER_LOSS = ['the retention janitor', "the targets file's entries"] as const;

/** The last loss heapcap noticed. */
export interface RedisDataLoss {
  at: string;
  lost: string[];
  recreated: string[];
}

export class RedisEpoch {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** At start: write the sentinel unless it is there (a first start and a loss before it cannot be told apart). */
  async start(): Promise<void> {
    await withRedisDeadline(this.#ctx.redis.set(this.#ctx.keys.epoch(), new Date().toISOString(), 'NX'), this.#ctx.settings.redisTimeoutMs, 'redis epoch');
  }

  /**
   * While running: 'kept' while the sentinel is there; 'lost' when it is gone
   * and this process is the first to notice (then the loss is recorded);
   * 'noticed' when another process wrote it again first.
   */
  async check(): Promise<'kept' | 'lost' | 'noticed'> {
    const { redis, keys, settings } = this.#ctx;
    if ((await withRedisDeadline(redis.exists(keys.epoch()), settings.redisTimeoutMs, 'redis epoch')) === 1) return 'kept';
    const now = new Date().toISOString();
    const won = await withRedisDeadline(redis.set(keys.epoch(), now, 'NX'), settings.redisTimeoutMs, 'redis epoch');
    if (won !== 'OK') return 'noticed';
    const loss: RedisDataLoss = { at: now, lost: [...LOST_WITH_REDIS], recreated: [...RECREATED_AFTER_LOSS] };
    await withRedisDeadline(redis.set(keys.dataLost(), JSON.stringify(loss)), settings.redisTimeoutMs, 'redis data loss');
    return 'lost';
  }

  /** The last loss recorded in this Redis, or null. */
  async lastLoss(): Promise<RedisDataLoss | null> {
    const raw = await withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.dataLost()), this.#ctx.settings.redisTimeoutMs, 'redis data loss');
    return raw === null ? null : (JSON.parse(raw) as RedisDataLoss);
  }
}
