/**
 * The captures this process accepted (answered 202) that have not finished,
 * kept in memory: after Redis lost its data their records and jobs are gone,
 * and this process is the one place that still knows them. It writes each
 * record again as failed (`redis_data_lost`) so a client polling the capture
 * reads why instead of a 404, and the caller logs their ids. A worker that was
 * still running one of them replaces that record with how it really ended
 * (AttemptRecorder.restore).
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { AttemptRecorder } from './attempts.ts';
import type { CaptureRecord } from './schemas.ts';

/** At most this many are kept (the oldest go first): a bound on memory if finishes are never seen. */
const MAX_ACCEPTED = 10_000;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

/** A capture whose record was written again after a loss. */
export interface LostCapture {
  captureId: string;
  targetId: string;
}

export class AcceptedCaptures {
  readonly #ctx: QueueContext;
  readonly #records = new Map<string, CaptureRecord>();
  readonly #recorder: AttemptRecorder;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.#recorder = new AttemptRecorder(ctx);
  }

  /** Remember a capture this process created. */
  add(record: CaptureRecord): void {
    this.#records.set(record.id, record);
    if (this.#records.size > MAX_ACCEPTED) {
      const oldest = this.#records.keys().next();
      if (oldest.done !== true) this.#records.delete(oldest.value);
    }
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
   * After a loss: write each remembered record that is gone again as failed
   * with `redis_data_lost`, forget those, and return them.
   */
  async recordLost(): Promise<LostCapture[]> {
    const now = new Date().toISOString();
    const lost: LostCapture[] = [];
    for (const record of [...this.#records.values()]) {
      const failed: CaptureRecord = {
        ...record,
        status: 'failed',
        phase: null,
        error: {
          // No live worker wrote it again within the grace (targets-sync.ts): it had not started.
          phase: 'queued',
          code: 'redis_data_lost',
          message: 'Redis lost its data before this capture finished (a restart without persistence, a failover or FLUSHALL): its job went with it',
          hint: 'request the capture again',
        },
        finishedAt: now,
        updatedAt: now,
      };
      // 'exists': accepted after the loss (or written again already): kept until it finishes.
      if ((await this.#recorder.restore(failed, true)) === 'exists') continue;
      lost.push({ captureId: record.id, targetId: record.targetId });
      this.#records.delete(record.id);
    }
    return lost;
  }
}
