/**
 * Noticing that Redis lost its data (a restart without persistence, a
 * failover to an empty replica, FLUSHALL): a sentinel key written once when
 * heapcap first meets this Redis. Its absence later means everything heapcap
 * kept there went with it. The first process to notice records when (for
 * `/readyz`) and says so; every process notices it too (the sentinel's value
 * changed) and re-creates what it owns, among that the records of the
 * captures it accepted that had not finished (accepted-captures.ts).
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { AcceptedCaptures } from './accepted-captures.ts';

/** What goes with Redis's data (said in the log line and in `/readyz`). */
export const LOST_WITH_REDIS = ['schedules', 'watch rules', 'API-registered targets', 'queued captures', 'capture records', 'pins', 'the audit log'] as const;
/** What heapcap re-creates by itself. */
export const RECREATED_AFTER_LOSS = ['the retention janitor', "the targets file's entries", "the records of stored captures (from their manifests, at the janitor's next run)"] as const;

/** The last loss heapcap noticed. */
export interface RedisDataLoss {
  at: string;
  lost: string[];
  recreated: string[];
  /** When the janitor walked the store for captures whose records were lost, and how many it wrote again from their manifests. */
  orphansSwept?: { at: string; adopted: number };
}

/** What this process counted since it started (process-local: Redis's own counters go with its data). */
export interface DataLossCounts {
  /** Losses this process noticed. */
  losses: number;
  /** Captures whose record was lost, by who wrote them again: the process that accepted them (it knew only that they had not finished) or the worker that ran them. */
  captures: { accepted: number; running: number };
}

export class RedisEpoch {
  readonly #ctx: QueueContext;
  /** The sentinel's value as this process last saw it (undefined: not read yet). */
  #seen: string | undefined;
  readonly #counts: DataLossCounts = { losses: 0, captures: { accepted: 0, running: 0 } };
  /** Captures this process accepted that have not finished: their records are written again after a loss. */
  readonly accepted: AcceptedCaptures;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.accepted = new AcceptedCaptures(ctx);
  }

  /** At start: write the sentinel unless it is there (a first start and a loss before it cannot be told apart). */
  async start(): Promise<void> {
    const { redis, keys, settings } = this.#ctx;
    await withRedisDeadline(redis.set(keys.epoch(), new Date().toISOString(), 'NX'), settings.redisTimeoutMs, 'redis epoch');
    this.#seen = (await withRedisDeadline(redis.get(keys.epoch()), settings.redisTimeoutMs, 'redis epoch')) ?? undefined;
  }

  /**
   * While running: 'kept' while the sentinel is the one seen before; 'lost'
   * when it is gone and this process is the first to notice (then the loss is
   * recorded); 'noticed' when another process wrote it again first (its value
   * changed). Either of the last two counts as a loss this process noticed.
   */
  async check(): Promise<'kept' | 'lost' | 'noticed'> {
    const { redis, keys, settings } = this.#ctx;
    const value = await withRedisDeadline(redis.get(keys.epoch()), settings.redisTimeoutMs, 'redis epoch');
    if (value !== null && (this.#seen === undefined || value === this.#seen)) {
      this.#seen = value;
      return 'kept';
    }
    if (value !== null) return this.#noticed(value, 'noticed');
    const now = new Date().toISOString();
    const won = await withRedisDeadline(redis.set(keys.epoch(), now, 'NX'), settings.redisTimeoutMs, 'redis epoch');
    if (won !== 'OK') return this.#noticed((await withRedisDeadline(redis.get(keys.epoch()), settings.redisTimeoutMs, 'redis epoch')) ?? undefined, 'noticed');
    const loss: RedisDataLoss = { at: now, lost: [...LOST_WITH_REDIS], recreated: [...RECREATED_AFTER_LOSS] };
    await withRedisDeadline(redis.set(keys.dataLost(), JSON.stringify(loss)), settings.redisTimeoutMs, 'redis data loss');
    return this.#noticed(now, 'lost');
  }

  #noticed<K extends 'lost' | 'noticed'>(value: string | undefined, kind: K): K {
    this.#seen = value;
    this.#counts.losses++;
    return kind;
  }

  /** Count captures whose record went with Redis's data (the metric heapcap_captures_lost_with_redis_total). */
  countLostCaptures(state: 'accepted' | 'running', n = 1): void {
    this.#counts.captures[state] += n;
  }

  /** This process's counts (for /metrics). */
  counts(): DataLossCounts {
    return { losses: this.#counts.losses, captures: { ...this.#counts.captures } };
  }

  /** Record that the store was swept for captures the loss orphaned (once per loss; a second sweep would find nothing new). */
  async markOrphansSwept(swept: { at: string; adopted: number }): Promise<void> {
    const loss = await this.lastLoss();
    if (loss === null) return;
    await withRedisDeadline(this.#ctx.redis.set(this.#ctx.keys.dataLost(), JSON.stringify({ ...loss, orphansSwept: swept })), this.#ctx.settings.redisTimeoutMs, 'redis data loss');
  }

  /** The last loss recorded in this Redis, or null. */
  async lastLoss(): Promise<RedisDataLoss | null> {
    const raw = await withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.dataLost()), this.#ctx.settings.redisTimeoutMs, 'redis data loss');
    return raw === null ? null : (JSON.parse(raw) as RedisDataLoss);
  }
}
