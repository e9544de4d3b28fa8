/** Redis connections with settings chosen for their role, and a deadline helper. */
import { parseRedisUrl } from '@heapcap/config';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { QueueError } from './errors.ts';

/**
 * A connection to one Redis or to a Redis Cluster (HEAPCAP_REDIS_URL
 * `redis+cluster://…`). ioredis routes each command of a `Cluster` to the
 * master of its key's slot and follows MOVED/ASK; BullMQ takes either.
 */
export type RedisClient = Redis | Cluster;

/**
 * - `command`: API and bookkeeping. A command fails after ~1 s of outage
 *   (3 retries, reconnect backoff up to 1 s) instead of hanging a request;
 *   the API answers 503 and the caller retries with its Idempotency-Key.
 * - `blocking`: BullMQ workers and pub/sub subscribers. BullMQ requires
 *   `maxRetriesPerRequest: null` there: commands wait out an outage.
 */
export type ConnectionRole = 'command' | 'blocking';

/** A new ioredis client (a `Cluster` for a cluster URL) for `url` configured for `role`. */
export function createRedis(url: string, role: ConnectionRole, name: string): RedisClient {
  const options: RedisOptions = {
    connectionName: name,
    connectTimeout: 5_000,
    // Reconnect forever, quickly at first: an outage of a few seconds (restart, failover) must heal by itself.
    retryStrategy: (times) => Math.min(times * 100, role === 'command' ? 1_000 : 2_000),
    maxRetriesPerRequest: role === 'command' ? 3 : null,
    enableReadyCheck: true,
  };
  const target = parseRedisUrl(url);
  const redis: RedisClient =
    target.kind === 'single'
      ? new Redis(url, options)
      : new Cluster(target.nodes, {
          // Per-node settings; BullMQ reads maxRetriesPerRequest from here on a cluster.
          redisOptions: {
            ...options,
            ...(target.username === undefined ? {} : { username: target.username }),
            ...(target.password === undefined ? {} : { password: target.password }),
            ...(target.tls ? { tls: {} } : {}),
          },
          // The cluster as a whole reconnects like one Redis: forever, backing off to 1–2 s.
          clusterRetryStrategy: (times) => Math.min(times * 100, role === 'command' ? 1_000 : 2_000),
          enableReadyCheck: true,
          // A master that restarts answers CLUSTERDOWN for a moment; retry instead of failing the command.
          retryDelayOnClusterDown: 200,
        });
  // Connection errors surface through the commands that fail; without a listener
  // ioredis would print every reconnect attempt as an unhandled 'error' event.
  redis.on('error', () => {});
  return redis;
}

/**
 * A second connection like `redis` with other options (BullMQ workers need
 * `maxRetriesPerRequest: null`). `Redis#duplicate` and `Cluster#duplicate`
 * take different arguments: a cluster's per-node options are its `redisOptions`.
 */
export function duplicateRedis(redis: RedisClient, override: Pick<RedisOptions, 'maxRetriesPerRequest' | 'connectionName'>): RedisClient {
  if (redis instanceof Cluster) {
    const copy = redis.duplicate(undefined, { redisOptions: { ...redis.options.redisOptions, ...override } });
    copy.on('error', () => {});
    return copy;
  }
  return redis.duplicate(override);
}

/**
 * Resolves with `p`, or rejects with a QueueError('redis_unavailable') after `ms`.
 * The deadline counts Redis's silence, not this process's own stalls: after a
 * stall (a long synchronous task, a starved CPU) Node runs due timers before it
 * reads its sockets, so an answer already waiting would lose to the timer and
 * the API would answer 503. The timer therefore rejects from setImmediate, after
 * that loop turn has read the sockets (packages/state/test/redis-deadline.test.ts).
 */
export async function withRedisDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(new QueueError('redis_unavailable', `Redis did not answer ${what} within ${ms} ms`))), ms);
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
export async function closeRedis(redis: RedisClient, timeoutMs = 1_000): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await withRedisDeadline(redis.quit(), timeoutMs, 'QUIT');
  } catch {
    redis.disconnect();
  }
}
