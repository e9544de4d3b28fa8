/**
 * The captures this process accepted (answered 202) that have not finished,
 * kept in memory: after Redis lost its data their records and jobs are gone,
 * and this process is the one place that still knows them. It answers their
 * GET from memory meanwhile (never a 404 for a capture it accepted), then
 * queues each again with its original id, trigger and options, marked
 * `requeuedAfterDataLoss` (a capture that was running is written again by
 * its worker first, AttemptRecorder.restore, and is left to it).
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { AttemptRecorder } from './attempts.ts';
import { enqueueCapture } from './jobs.ts';
import type { CaptureRecord } from './schemas.ts';

/** At most this many are kept (the oldest go first): a bound on memory if finishes are never seen. */
const MAX_ACCEPTED = 10_000;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** A capture whose record and job were written again after a loss. */
export interface LostCapture {
  captureId: string;
  targetId: string;
}

/** What this process knows of a capture it accepted: the record it wrote, and the queue its job went to. */
interface Accepted {
  record: CaptureRecord;
  placement: string | undefined;
}

export class AcceptedCaptures {
  readonly #ctx: QueueContext;
  readonly #records = new Map<string, Accepted>();
  readonly #recorder: AttemptRecorder;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.#recorder = new AttemptRecorder(ctx);
  }

  /** Remember a capture this process created (`placement`: its target's, the queue its job went to). */
  add(record: CaptureRecord, placement?: string): void {
    this.#records.set(record.id, { record, placement });
    if (this.#records.size > MAX_ACCEPTED) {
      const oldest = this.#records.keys().next();
      if (oldest.done !== true) this.#records.delete(oldest.value);
    }
  }

  /** The record as this process accepted it, while remembered (for a GET after Redis lost it). */
  get(id: string): CaptureRecord | undefined {
    return this.#records.get(id)?.record;
  }

  /** How many are remembered now. */
  get size(): number {
    return this.#records.size;
  }

  /**
   * Forget the ones that finished (read from Redis while its data is known to
   * be there). A missing record is kept: it may be gone with a loss not noticed yet.
   */
  async prune(): Promise<void> {
    const ids = [...this.#records.keys()];
    if (ids.length === 0) return;
    const pipe = this.#ctx.redis.pipeline();
    for (const id of ids) pipe.hget(this.#ctx.keys.record(id), 'status');
    const replies = (await withRedisDeadline(pipe.exec(), this.#ctx.settings.redisTimeoutMs, 'accepted captures')) ?? [];
    ids.forEach((id, i) => {
      const status = replies[i]?.[1];
      if (typeof status === 'string' && TERMINAL.has(status)) this.#records.delete(id);
    });
  }

  /**
   * After a loss: write each remembered record that is gone again as queued
   * (`requeuedAfterDataLoss`), with its job, and return those. They stay
   * remembered until they finish: a second loss queues them again.
   */
  async requeueLost(): Promise<LostCapture[]> {
    const now = new Date().toISOString();
    const requeued: LostCapture[] = [];
    for (const { record, placement } of [...this.#records.values()]) {
      const again: CaptureRecord = { ...record, status: 'queued', phase: null, error: null, requeuedAfterDataLoss: true, updatedAt: now };
      // 'exists': a worker wrote it again (it was running), or it was accepted after the loss: left as it is.
      if ((await this.#recorder.restore(again, false, placement === undefined ? {} : { placement })) === 'exists') continue;
      await enqueueCapture(this.#ctx, record.id, record.targetId, placement);
      this.#records.set(record.id, { record: again, placement });
      requeued.push({ captureId: record.id, targetId: record.targetId });
    }
    return requeued;
  }
}
