/** Connecting to Redis at start-up, with the one message every service prints when it is not there. */
import { createQueue, type HeapcapQueue, type QueueOptions } from '@heapcap/state';
import { safeRedisUrl } from './logger.ts';

/** Redis is not reachable at start-up; the message says how to get one. */
export class RedisUnreachableError extends Error {
  override readonly name = 'RedisUnreachableError';
  readonly code = 'redis_unavailable';
}

/** The operator-facing text for an unreachable Redis. */
export function redisHelp(redisUrl: string): string {
  return [
    `Redis is not reachable at ${safeRedisUrl(redisUrl)}.`,
    'heapcap keeps its queue, capture records and target locks in Redis. Start one:',
    '  apt-get install redis-server && redis-server --daemonize yes',
    '  or: docker compose up -d redis',
    'or point HEAPCAP_REDIS_URL at an existing Redis (redis://HOST:PORT or rediss://…) or Redis Cluster (redis+cluster://HOST:PORT,HOST:PORT).',
  ].join('\n');
}

/** Open the queue and check Redis answers within `timeoutMs`; throws RedisUnreachableError otherwise. */
export async function connectQueue(options: QueueOptions, timeoutMs = 3_000): Promise<HeapcapQueue> {
  const queue = createQueue(options);
  try {
    await queue.ping(timeoutMs);
    return queue;
  } catch (err) {
    await queue.close();
    throw new RedisUnreachableError(redisHelp(options.redisUrl), { cause: err });
  }
}
