/** Test helpers: a fresh key prefix per test against one real Redis, and a target entry. */
import { randomBytes } from 'node:crypto';
import { createQueue, type HeapcapQueue, type QueueOptions, type Target } from '../src/index.ts';

/** A queue on `redisUrl` with a prefix no other test uses. */
export function freshQueue(redisUrl: string, options: Partial<QueueOptions> = {}): HeapcapQueue {
  return createQueue({ redisUrl, prefix: `t${randomBytes(4).toString('hex')}`, ...options });
}

/** A node target entry (nothing listens on the port; enough for queue tests). */
export function nodeTarget(id: string, inspect = '127.0.0.1:9'): Target {
  return { id, kind: 'node', inspect, labels: { service: 'test' } };
}

/** A REST trigger. */
export const restTrigger = (who = 'oncall', reason?: string) => ({ kind: 'rest' as const, who, reason });
