/**
 * Leak hunts: three captures of one target `interval` apart on one inspector
 * session (V8 keeps object ids only while nothing clears them), then the
 * three-snapshot report. A hunt is a JSON document in Redis (kept 30 days)
 * and a `leak-hunt` job on a queue of its own; the worker runs it.
 *
 * A hunt connects to the target like a capture, so it follows the target's
 * placement the same way (placement.ts): a placed target's hunt goes to
 * `heapcap-leak-hunts.at.<placement>`, which only workers of that placement
 * (or `*`) consume, and fails at once with `no_worker_for_target` when no
 * live worker consumes it. Analyses read stored artifacts, not targets: they
 * stay on one shared queue.
 */
import type { Queue } from 'bullmq';
import { z } from 'zod';
import { IdSchema, newCaptureId, RedactModeSchema, type RedactMode } from '@heapcap/config';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { LazyProducer } from './producer.ts';
import { QueueError } from './errors.ts';
import { placedQueueName } from './routing.ts';
import { WorkerDirectory } from './workers.ts';
import { noWorkerError } from './no-worker.ts';
import { driveSummary, HuntDriveSchema, HuntDriveSummarySchema, type HuntDrive } from './hunt-drive.ts';

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
  /** What the hunt does to the target after the baseline (its headers and body stay in the job, never on the record). */
  drive: HuntDriveSummarySchema.optional(),
  requestedBy: z.string(),
  /**
   * Whether the worker tracks allocations between the baseline and target snapshots (the report's suspects then say
   * where their objects were allocated); false when the request said `allocations: false`. Absent on older hunts.
   */
  allocations: z.boolean().optional(),
  /** `strings` when the request asked for redaction (a request can raise the target's or the service's setting, never lower it). */
  redact: RedactModeSchema.optional(),
  /**
   * How the hunt's snapshots were redacted before any byte reached the worker's scratch files (the request,
   * else the target's `redact`, else HEAPCAP_REDACT), written when the worker starts; `redactedStrings`
   * counts the string values replaced in the snapshots taken so far. Absent on hunts from before it was recorded.
   */
  redaction: z.strictObject({ mode: RedactModeSchema, redactedStrings: z.number().int().nonnegative().optional() }).optional(),
  /** The target's placement when the hunt was created: only a worker of it runs the hunt. */
  placement: z.string().optional(),
  /** The id of the worker that runs (or ran) the hunt (GET /v1/workers). */
  worker: z.string().optional(),
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
export const LeakHuntJobSchema = z.strictObject({ huntId: IdSchema, drive: HuntDriveSchema.optional() });
export type LeakHuntJob = z.infer<typeof LeakHuntJobSchema>;

/** The BullMQ queue of a placement's leak hunts (`heapcap-leak-hunts` for none). */
export function leakHuntQueueName(placement: string | undefined | null): string {
  return placedQueueName(LEAK_HUNT_QUEUE, placement);
}

/** What a hunt needs to know of its target: that it is registered, and its placement. */
export type HuntTargetLookup = (id: string) => Promise<{ placement?: string | undefined } | null>;

/** Hunts: create (and enqueue), read, update. */
export class LeakHunts {
  readonly #ctx: QueueContext;
  readonly #lookup: HuntTargetLookup;
  /** Producers by queue name (the shared one and each placement's), opened on first use. */
  readonly #producers = new Map<string, LazyProducer<LeakHuntJob>>();

  constructor(ctx: QueueContext, lookup: HuntTargetLookup) {
    this.#ctx = ctx;
    this.#lookup = lookup;
  }

  /** The producer of `leak-hunt` jobs of `placement` (the shared queue for none; created on first use). */
  queueFor(placement?: string | null): Queue<LeakHuntJob, void, string> {
    const name = leakHuntQueueName(placement);
    let producer = this.#producers.get(name);
    if (producer === undefined) {
      producer = new LazyProducer(this.#ctx, name);
      this.#producers.set(name, producer);
    }
    return producer.bull;
  }

  /**
   * Create a hunt of a registered target and queue its job on the target's
   * placement's queue. A placed target without a live worker of its placement
   * gets a hunt that is failed at once (`no_worker_for_target`), not one left
   * queued. Throws QueueError `target_not_found`.
   */
  async create(input: { targetId: string; intervalMs: number; reason?: string | undefined; requestedBy: string; drive?: HuntDrive | undefined; redact?: RedactMode | undefined; allocations?: boolean | undefined }): Promise<LeakHuntRecord> {
    const target = await this.#lookup(input.targetId);
    if (target === null) throw new QueueError('target_not_found', `target "${input.targetId}" is not registered`, { targetId: input.targetId });
    const { placement } = target;
    const hunt: LeakHuntRecord = {
      id: newCaptureId(),
      targetId: input.targetId,
      intervalMs: input.intervalMs,
      reason: input.reason,
      drive: input.drive === undefined ? undefined : driveSummary(input.drive),
      requestedBy: input.requestedBy,
      redact: input.redact,
      allocations: input.allocations ?? true,
      placement,
      status: 'queued',
      phase: null,
      snapshots: [],
      createdAt: new Date().toISOString(),
    };
    if (placement !== undefined) {
      if (!(await new WorkerDirectory(this.#ctx).noteAndCheck(placement))) {
        const failed: LeakHuntRecord = { ...hunt, status: 'failed', finishedAt: new Date().toISOString(), error: noWorkerError(placement) };
        await this.#write(failed);
        await this.#index(failed);
        return failed;
      }
    }
    await this.#write(hunt);
    await this.#index(hunt);
    await withRedisDeadline(
      this.queueFor(placement).add(LEAK_HUNT_JOB, { huntId: hunt.id, drive: input.drive }, { jobId: hunt.id, removeOnComplete: { age: 24 * 3600, count: 1_000 }, removeOnFail: { age: 7 * 24 * 3600, count: 1_000 } }),
      this.#ctx.settings.redisTimeoutMs,
      'enqueue leak hunt',
    );
    return hunt;
  }

  /**
   * Fail the queued and running hunts of `placement` (no live worker consumes
   * it: the caller checked) with no_worker_for_target and drop their jobs, as
   * HeapcapQueue.failOrphanedPlacements does for captures. Returns their ids.
   */
  async failOrphaned(placement: string): Promise<string[]> {
    const jobs = await withRedisDeadline(this.queueFor(placement).getJobs(['waiting', 'prioritized', 'delayed', 'active'], 0, 999), this.#ctx.settings.redisTimeoutMs, 'orphaned hunts');
    const failed: string[] = [];
    for (const job of jobs) {
      const hunt = job.id === undefined ? null : await this.get(job.id);
      if (hunt !== null && (hunt.status === 'queued' || hunt.status === 'running')) {
        await this.put({ ...hunt, status: 'failed', finishedAt: new Date().toISOString(), error: noWorkerError(placement) });
        failed.push(hunt.id);
      }
      // An active job stays locked until its dead worker's lock expires; a later pass removes it.
      await job.remove().catch(() => undefined);
    }
    return failed;
  }

  /** The hunt, or null. */
  async get(id: string): Promise<LeakHuntRecord | null> {
    const text = await withRedisDeadline(this.#ctx.redis.get(this.#ctx.keys.leakHunt(id)), this.#ctx.settings.redisTimeoutMs, 'get leak hunt');
    return text === null ? null : LeakHuntRecordSchema.parse(JSON.parse(text));
  }

  /**
   * The newest hunts first (of one target with `targetId`), at most `limit`.
   * One round trip for the ids and one MGET for the records; an id whose
   * record expired is left out (the index is trimmed when hunts are created).
   */
  async list(opts: { targetId?: string | undefined; limit: number }): Promise<LeakHuntRecord[]> {
    const { redis, keys, settings } = this.#ctx;
    const index = opts.targetId === undefined ? keys.leakHuntIndex() : keys.leakHuntIndexTarget(opts.targetId);
    const ids = await withRedisDeadline(redis.zrevrange(index, 0, opts.limit - 1), settings.redisTimeoutMs, 'list leak hunts');
    if (ids.length === 0) return [];
    const texts = await withRedisDeadline(redis.mget(ids.map((id) => keys.leakHunt(id))), settings.redisTimeoutMs, 'read leak hunts');
    return texts.filter((t): t is string => t !== null).map((t) => LeakHuntRecordSchema.parse(JSON.parse(t)));
  }

  /** Write the hunt as it is now (the worker owns a running hunt: one writer). */
  async put(hunt: LeakHuntRecord): Promise<void> {
    await this.#write(LeakHuntRecordSchema.parse(hunt));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#producers.values()].map((p) => p.close()));
  }

  /** A new hunt goes into the list indexes; entries older than a record lives are dropped as it goes in. */
  async #index(hunt: LeakHuntRecord): Promise<void> {
    const { redis, keys, settings } = this.#ctx;
    const at = Date.parse(hunt.createdAt);
    const expired = at - HUNT_TTL_SECONDS * 1000;
    const tx = redis.multi();
    for (const index of [keys.leakHuntIndex(), keys.leakHuntIndexTarget(hunt.targetId)]) tx.zadd(index, at, hunt.id).zremrangebyscore(index, '-inf', expired).expire(index, HUNT_TTL_SECONDS);
    await withRedisDeadline(tx.exec(), settings.redisTimeoutMs, 'index leak hunt');
  }

  async #write(hunt: LeakHuntRecord): Promise<void> {
    await withRedisDeadline(this.#ctx.redis.set(this.#ctx.keys.leakHunt(hunt.id), JSON.stringify(hunt), 'EX', HUNT_TTL_SECONDS), this.#ctx.settings.redisTimeoutMs, 'write leak hunt');
  }
}
