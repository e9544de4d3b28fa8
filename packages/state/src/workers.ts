/**
 * Worker heartbeats: each worker writes `<base>:worker:<id>` (JSON, with a TTL
 * of three beats) and scores its id in the `<base>:workers` sorted set. A key
 * that expired is a dead worker; list() drops its id from the set.
 */
import { z } from 'zod';
import { withRedisDeadline } from './connection.ts';
import type { QueueContext } from './context.ts';
import { coversPlacement } from './routing.ts';

/** What a worker announces. */
export const WorkerInfoSchema = z.strictObject({
  id: z.string().min(1),
  /** `*` or the placements it consumes (every worker also consumes unplaced targets). */
  placements: z.array(z.string()),
  version: z.string(),
  host: z.string(),
  pid: z.number().int(),
  /** Captures running in it now. */
  inFlight: z.number().int().min(0),
  startedAt: z.iso.datetime(),
  lastSeenAt: z.iso.datetime(),
});
export type WorkerInfo = z.infer<typeof WorkerInfoSchema>;

/** Heartbeat writes and the live-worker list. */
export class WorkerDirectory {
  readonly #ctx: Pick<QueueContext, 'redis' | 'keys' | 'settings'>;

  constructor(ctx: Pick<QueueContext, 'redis' | 'keys' | 'settings'>) {
    this.#ctx = ctx;
  }

  /** Announce `info` as alive for `ttlMs`. */
  async beat(info: WorkerInfo, ttlMs: number): Promise<void> {
    const { redis, keys, settings } = this.#ctx;
    await withRedisDeadline(
      redis.multi().set(keys.worker(info.id), JSON.stringify(info), 'PX', ttlMs).zadd(keys.workers(), Date.now(), info.id).exec(),
      settings.redisTimeoutMs,
      'worker heartbeat',
    );
  }

  /** Live workers (heartbeat key present), by id. */
  async list(): Promise<WorkerInfo[]> {
    const { redis, keys, settings } = this.#ctx;
    const ids = await withRedisDeadline(redis.zrange(keys.workers(), 0, -1), settings.redisTimeoutMs, 'workers list');
    if (ids.length === 0) return [];
    const values = await withRedisDeadline(redis.mget(ids.map((id) => keys.worker(id))), settings.redisTimeoutMs, 'workers list');
    const live: WorkerInfo[] = [];
    const gone: string[] = [];
    ids.forEach((id, i) => {
      const v = values[i];
      const parsed = v === null || v === undefined ? null : WorkerInfoSchema.safeParse(JSON.parse(v));
      if (parsed?.success === true) live.push(parsed.data);
      else gone.push(id);
    });
    if (gone.length > 0) await redis.zrem(keys.workers(), ...gone).catch(() => 0);
    return live.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** Remember that jobs of `placement` were enqueued (so `*` workers and the orphan sweep know its queue). */
  async notePlacement(placement: string): Promise<void> {
    const { redis, keys, settings } = this.#ctx;
    await withRedisDeadline(redis.sadd(keys.placements(), placement), settings.redisTimeoutMs, 'placements');
  }

  /** Note `placement` (a job of it is about to be enqueued) and say whether a live worker consumes it. */
  async noteAndCheck(placement: string): Promise<boolean> {
    await this.notePlacement(placement);
    return (await this.list()).some((w) => coversPlacement(w.placements, placement));
  }

  /** Every placement that ever had a job. */
  async placements(): Promise<string[]> {
    const { redis, keys, settings } = this.#ctx;
    return (await withRedisDeadline(redis.smembers(keys.placements()), settings.redisTimeoutMs, 'placements')).sort();
  }
}
