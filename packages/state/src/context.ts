/** What the parts of a HeapcapQueue share: connections, key layout and settings. */
import type { Queue } from 'bullmq';
import type { RedisClient } from './connection.ts';
import type { CaptureEvents } from './events.ts';
import type { Keys } from './keys.ts';
import type { CaptureJob } from './schemas.ts';

/** Settings with their defaults applied (see QueueOptions for the meaning). */
export interface QueueSettings {
  attempts: number;
  backoffMs: number;
  idempotencyTtlMs: number;
  redisTimeoutMs: number;
  auditMaxLen: number;
}

export interface QueueContext {
  redisUrl: string;
  redis: RedisClient;
  keys: Keys;
  /** The producer of unplaced targets' jobs. */
  bull: Queue<CaptureJob, void, string>;
  /** The producer of a placement's jobs (`bull` for none); see placement.ts. */
  queueFor(placement: string | undefined | null): Queue<CaptureJob, void, string>;
  events: CaptureEvents;
  settings: QueueSettings;
}
