/**
 * Leak hunts: three captures of one target `interval` apart on one inspector
 * session (V8 keeps object ids only while nothing clears them), then the
 * three-snapshot report. A hunt is a JSON document in Redis (kept 30 days)
 * and a `leak-hunt` job on a queue of its own; the worker runs it.
 */
import type { Queue } from 'bullmq';
import { z } from 'zod';
import { IdSchema, newCaptureId } from '@heapcap/config';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { LazyProducer } from './producer.ts';
import { QueueError } from './errors.ts';

export const LEAK_HUNT_QUEUE = 'heapcap-leak-hunts';
export const LEAK_HUNT_JOB = 'leak-hunt';
/** How long a hunt's record is kept. */
const HUNT_TTL_SECONDS = 30 * 24 * 3600;

export const LEAK_HUNT_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

/** A leak hunt as stored and as the API answers it. */
export const LeakHuntRecordSchema = z.strictObject({
  id: IdSchema,
  targetId: IdSchema,
  intervalMs: z.number().int().positive(),
  reason: z.string().optional(),
  requestedBy: z.string(),
  status: z.enum(LEAK_HUNT_STATUSES),
  /** What the worker is doing: `baseline`, `wait`, `target`, `wait-final`, `final`, `report`. */
  phase: z.string().nullable(),
  /** Snapshots taken so far (bytes of JSON each). */
  snapshots: z.array(z.strictObject({ name: z.enum(['baseline', 'target', 'final']), at: z.iso.datetime(), bytes: z.number().int().nonnegative() })),
  /** The report's key in storage (`<id>.leak-hunt.json`), once succeeded. */
  reportKey: z.string().optional(),
  /** The classes the report names, largest first (count of surviving new instances). */
  classes: z.array(z.strictObject({ name: z.string(), count: z.number().int().nonnegative(), selfSize: z.number().nonnegative() })).optional(),
  error: z.strictObject({ code: z.string(), message: z.string(), hint: z.string().optional() }).optional(),
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().optional(),
  finishedAt: z.iso.datetime().optional(),
});
export type LeakHuntRecord = z.infer<typeof LeakHuntRecordSchema>;

/** The `leak-hunt` job's payload. */
export const LeakHuntJobSchema = z.strictObject({ huntId: IdSchema });
export type LeakHuntJob = z.infer<typeof LeakHuntJobSchema>;

/** Hunts: create (and enqueue), read, update. */
export class LeakHunts {
  readonly #ctx: QueueContext;
  readonly #targetExists: (id: string) => Promise<boolean>;
  readonly #producer: LazyProducer<LeakHuntJob>;

  constructor(ctx: QueueContext, targetExists: (id: string) => Promise<boolean>) {
    this.#ctx = ctx;
    this.#targetExists = targetExists;
    this.#producer = new LazyProducer(ctx, LEAK_HUNT_QUEUE);
  }

  /** The producer of `leak-hunt` jobs (created on first use). */
  get bull(): Queue<LeakHuntJob, void, string> {
    return this.#producer.bull;
  }

  /** Create a hunt of a registered target and queue its job. Throws QueueError `target_not_found`. */
  async create(input: { targetId: string; intervalMs: number; reason?: string | undefined; requestedBy: string }): Promise<LeakHuntRecord> {
    if (!(await this.#targetExists(input.targetId))) throw new QueueError('target_not_found', `target "${input.targetId}" is not registered`, { targetId: input.targetId });
    const hunt: LeakHuntRecord = {
      id: newCaptureId(),
      targetId: input.targetId,
      intervalMs: input.intervalMs,
      ...(input.reason === undefined ? {} : { reason: input.reason }),
      requestedBy: input.requestedBy,
      status: 'queued',
      phase: null,
      snapshots: [],
      createdAt: new Date().toISOString(),
    };
    await this.#write(hunt);
    await withRedisDeadline(
      this.bull.add(LEAK_HUNT_JOB, { huntId: hunt.id }, { jobId: hunt.id, removeOnComplete: { age: 24 * 3600, count: 1_000 }, removeOnFail: { age: 7 * 24 * 3600, count: 1_000 } }),
      this.#ctx.settings.redisTimeoutMs,
      'enqueue leak hunt',
    );
    return hunt;
  }

  /** The hunt, or null. */
  async get(id: string): Promise<LeakHuntRecord | null> {
    const text = await withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.leakHunt(id)), this.#ctx.settings.redisTimeoutMs, 'get leak hunt');
    return text === null ? null : LeakHuntRecordSchema.parse(JSON.parse(text));
  }

  /** Write the hunt as it is now (the worker owns a running hunt: one writer). */
  async put(hunt: LeakHuntRecord): Promise<void> {
    await this.#write(LeakHuntRecordSchema.parse(hunt));
  }

  async close(): Promise<void> {
    await this.#producer.close();
  }

  async #write(hunt: LeakHuntRecord): Promise<void> {
    await withRedisDeadline(this.#ctx.redis.set(this.#ctx.keys.leakHunt(hunt.id), JSON.stringify(hunt), 'EX', HUNT_TTL_SECONDS), this.#ctx.settings.redisTimeoutMs, 'write leak hunt');
  }
}
