/** Redis connections with settings chosen for their role, and a deadline helper. */
import { Redis, type RedisOptions } from 'ioredis';
import { QueueError } from './errors.ts';

/**
 * - `command`: API and bookkeeping. A command fails after ~1 s of outage
 *   (3 retries, reconnect backoff up to 1 s) instead of hanging a request;
 *   the API answers 503 and the caller retries with its Idempotency-Key.
 * - `blocking`: BullMQ workers and pub/sub subscribers. BullMQ requires
 *   `maxRetriesPerRequest: null` there: commands wait out an outage.
 */
export type ConnectionRole = 'command' | 'blocking';

/** A new ioredis client for `url` configured for `role`. */
export function createRedis(url: string, role: ConnectionRole, name: string): Redis {
  const options: RedisOptions = {
    connectionName: name,
    connectTimeout: 5_000,
    // Reconnect forever, quickly at first: an outage of a few seconds (restart, failover) must heal by itself.
    retryStrategy: (times) => Math.min(times * 100, role === 'command' ? 1_000 : 2_000),
    maxRetriesPerRequest: role === 'command' ? 3 : null,
    enableReadyCheck: true,
  };
  const redis = new Redis(url, options);
  // Connection errors surface through the commands that fail; without a listener
  // ioredis would print every reconnect attempt as an unhandled 'error' event.
  redis.on('error', () => {});
  return redis;
}

/** Resolves with `p`, or rejects with a QueueError('redis_unavailable') after `ms`. */
export async function withRedisDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new QueueError('redis_unavailable', `Redis did not answer ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } catch (err) {
    if (err instanceof QueueError) throw err;
    throw new QueueError('redis_unavailable', `Redis ${what} failed: ${err instanceof Error ? err.message : String(err)}`, undefined, err);
  } finally {
    clearTimeout(timer);
  }
}

/** Quit politely, then disconnect if QUIT does not answer quickly (Redis may be down). */
export async function closeRedis(redis: Redis, timeoutMs = 1_000): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await withRedisDeadline(redis.quit(), timeoutMs, 'QUIT');
  } catch {
    redis.disconnect();
  }
}
