/**
 * The worker's side of a record: start an attempt, report phases, finish.
 * Every write after start carries the attempt number it got; a write from an
 * attempt that is no longer current (its worker stalled and the job moved on)
 * is refused, and a terminal status is never overwritten.
 */
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { finishedIncrements, incrementArgs } from './finished-metrics.ts';
import { parseHeadroomSample, type HeadroomSample } from './headroom-history.ts';
import { BEGIN_SCRIPT, RESTORE_SCRIPT, TRANSITION_SCRIPT } from './lua-captures.ts';
import { decodeRecord, encodeRecord, encodeUpdate } from './record-codec.ts';
import { getCapture } from './records.ts';
import type { QueueError } from './errors.ts';
import { decodeEntry, type RegisteredTarget } from './registry.ts';
import { hashFromReply } from './reply.ts';
import { replyStrings } from './script.ts';
import type { CaptureRecord, CaptureStatus } from './schemas.ts';

/** Result of a transition: applied, or why not (with the status found). */
export type TransitionResult =
  | { ok: true; status: CaptureStatus; attempts: number }
  | { ok: false; reason: 'missing' | 'terminal' | 'conflict' | 'stale'; status: CaptureStatus | null; attempts: number };

export type CaptureErrorInfo = NonNullable<CaptureRecord['error']>;
export type CaptureArtifactInfo = NonNullable<CaptureRecord['artifact']>;
export type CaptureProgressInfo = NonNullable<CaptureRecord['progress']>;

/** What {@link AttemptRecorder.begin} found, and whether the attempt started. */
export type BeginResult =
  | { kind: 'missing' }
  | { kind: 'terminal'; status: CaptureStatus }
  | { kind: 'no_target'; status: CaptureStatus }
  | { kind: 'busy'; status: CaptureStatus }
  | {
      kind: 'started';
      /** The new attempt's number. */
      attempt: number;
      /** The record as it was before this attempt started. */
      record: CaptureRecord;
      /** Whether a cancel was requested (a flag left while an earlier attempt ran). */
      cancelRequested: boolean;
      /** The registry entry, or the QueueError of one that no longer validates. */
      entry: RegisteredTarget | QueueError;
      /** The target's last measured snapshot cost (null: none, or one that does not parse). */
      headroom: HeadroomSample | null;
    };

/** Worker-side record transitions (see the module comment). */
export class AttemptRecorder {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** queued (or running, left by a dead worker) → running; increments `attempts`. The new attempt number is `attempts`. */
  start(captureId: string, targetId: string, workerId?: string): Promise<TransitionResult> {
    const now = new Date().toISOString();
    return this.#transition(captureId, targetId, 'running', ['queued', 'running'], undefined, true, { startedAt: now, phase: null, progress: null, error: null, worker: workerId });
  }

  /**
   * The worker's first round trip for a capture job (it was six: record, registry, lock, start, cancel flag,
   * headroom): in one script, read the record, find the target, take its lock with `leaseMs`, and move the
   * record to running with one more attempt. Nothing changes unless the attempt starts. A registry entry that
   * no longer validates is found after the start (the lock is taken then): the caller ends the attempt.
   */
  async begin(captureId: string, targetId: string, lockToken: string, leaseMs: number, workerId?: string): Promise<BeginResult> {
    const { keys, redis, settings } = this.#ctx;
    const now = new Date().toISOString();
    const reply = replyStrings(
      await withRedisDeadline(
        BEGIN_SCRIPT.run(
          redis,
          [keys.record(captureId), keys.active(targetId), ...keys.statusIndexes(), keys.finishedMetrics(), keys.targets(), keys.targetLock(targetId), keys.headroom(targetId)],
          [targetId, lockToken, String(leaseMs), now, ...encodeUpdate({ startedAt: now, phase: null, progress: null, error: null, worker: workerId })],
        ),
        settings.redisTimeoutMs,
        'begin attempt',
      ),
    );
    const [word, status] = reply;
    if (word === 'missing') return { kind: 'missing' };
    if (word === 'terminal' || word === 'no_target' || word === 'busy') return { kind: word, status: status as CaptureStatus };
    if (word !== 'started') throw new Error(`begin attempt: unexpected reply ${JSON.stringify(reply)}`);
    const n = Number(reply[3]);
    const hash = hashFromReply(reply.slice(4 + n));
    const record = decodeRecord(hash);
    if (record === null) throw new Error(`begin attempt: the record of ${captureId} was read empty`);
    const entry = decodeEntry(targetId, reply[2]!);
    return { kind: 'started', attempt: Number(reply[1]), record, cancelRequested: hash['cancelRequested'] === '1', entry, headroom: parseHeadroomSample(hashFromReply(reply.slice(4, 4 + n))) };
  }

  /** Record the phase running now, and (optionally) its live progress. */
  phase(captureId: string, targetId: string, attempt: number, phase: string, progress?: CaptureProgressInfo): Promise<TransitionResult> {
    return this.#transition(captureId, targetId, 'running', ['running'], attempt, false, { phase, progress });
  }

  /** running → succeeded with timings and artifact (and, for a snapshot, the redaction it ran with). */
  succeed(captureId: string, targetId: string, attempt: number, timings: Record<string, number>, artifact: CaptureArtifactInfo, redaction?: CaptureRecord['redaction']): Promise<TransitionResult> {
    return this.#transition(captureId, targetId, 'succeeded', ['running'], attempt, false, {
      phase: null,
      progress: null,
      error: null,
      timings,
      artifact,
      redaction,
      finishedAt: new Date().toISOString(),
    });
  }

  /** running → failed (final) or → queued (a retry follows); the error stays visible either way, and `failedAttempts` (when given) replaces the list. */
  fail(
    captureId: string,
    targetId: string,
    attempt: number,
    error: CaptureErrorInfo,
    timings: Record<string, number> | null,
    retry: boolean,
    failedAttempts?: CaptureRecord['failedAttempts'],
  ): Promise<TransitionResult> {
    const fields = { phase: error.phase ?? null, progress: null, error, timings, failedAttempts };
    return retry
      ? this.#transition(captureId, targetId, 'queued', ['running'], attempt, false, fields)
      : this.#transition(captureId, targetId, 'failed', ['running'], attempt, false, { ...fields, finishedAt: new Date().toISOString() });
  }

  /** running → cancelled (the cancel request reached the worker). */
  cancelled(captureId: string, targetId: string, attempt: number, phase: string | null, timings: Record<string, number> | null): Promise<TransitionResult> {
    return this.#transition(captureId, targetId, 'cancelled', ['running'], attempt, false, {
      phase,
      progress: null,
      timings,
      error: { code: 'cancelled', message: 'cancelled while running', ...(phase === null ? {} : { phase }) },
      finishedAt: new Date().toISOString(),
    });
  }

  /** running → queued without an error: the worker is shutting down and hands the capture back. */
  release(captureId: string, targetId: string, attempt: number): Promise<TransitionResult> {
    return this.#transition(captureId, targetId, 'queued', ['running'], attempt, false, { phase: null, progress: null });
  }

  /** queued|running → failed without attempt fencing: the reconciler ends a capture whose job is gone. */
  abandon(captureId: string, targetId: string, error: CaptureErrorInfo): Promise<TransitionResult> {
    return this.#transition(captureId, targetId, 'failed', ['queued', 'running'], undefined, false, { error, progress: null, finishedAt: new Date().toISOString() });
  }

  /**
   * Write `record` again after Redis lost it (queue redis-epoch.ts), with its
   * indexes, so it is found and retention deletes its artifacts in time.
   * `lostWhileQueued` marks a record written by the process that accepted the
   * capture (it only knows it was lost): a worker's later restore replaces it.
   * 'exists' when a record is there (and is not such a mark). `extra`: bookkeeping fields (`placement`).
   */
  async restore(record: CaptureRecord, lostWhileQueued = false, extra: Record<string, string> = {}): Promise<'restored' | 'exists'> {
    const { keys, redis, settings } = this.#ctx;
    const active = record.status === 'queued' || record.status === 'running';
    const scheduleId = record.trigger.scheduleId;
    const reply = replyStrings(
      await withRedisDeadline(
        RESTORE_SCRIPT.run(
          redis,
          [
            keys.record(record.id),
            keys.indexAll(),
            keys.indexTarget(record.targetId),
            keys.indexStatus(record.status),
            keys.indexTrigger(record.trigger.kind),
            scheduleId === undefined ? keys.indexTrigger(record.trigger.kind) : keys.indexSchedule(scheduleId),
            keys.active(record.targetId),
            keys.indexStatus('failed'),
          ],
          [
            record.id,
            String(Date.parse(record.createdAt)),
            scheduleId === undefined ? '0' : '1',
            active ? '1' : '0',
            ...encodeRecord(record, { kind: record.options.kind, ...extra, ...(lostWhileQueued ? { lostWithRedis: '1' } : {}) }),
          ],
        ),
        settings.redisTimeoutMs,
        'restore record',
      ),
    );
    return reply[0] === 'restored' ? 'restored' : 'exists';
  }

  /** True when a cancel was requested for this (running) capture. */
  async cancelRequested(captureId: string): Promise<boolean> {
    const v = await withRedisDeadline(this.#ctx.redis.hget(this.#ctx.keys.record(captureId), 'cancelRequested'), this.#ctx.settings.redisTimeoutMs, 'HGET');
    return v === '1';
  }

  /**
   * True when the record went with Redis's data: it is missing, or it is the
   * `lostWithRedis` mark the accepting process wrote again (a worker still
   * running the capture may replace either, see {@link restore}).
   */
  async lostWithRedis(captureId: string): Promise<boolean> {
    const [status, mark] = await withRedisDeadline(this.#ctx.redis.hmget(this.#ctx.keys.record(captureId), 'status', 'lostWithRedis'), this.#ctx.settings.redisTimeoutMs, 'HMGET');
    return status === null || mark === '1';
  }

  /** The record (for the worker's pre-checks). */
  get(captureId: string): Promise<CaptureRecord | null> {
    return getCapture(this.#ctx, captureId);
  }

  async #transition(
    captureId: string,
    targetId: string,
    to: CaptureStatus,
    from: CaptureStatus[],
    attempt: number | undefined,
    incrementAttempts: boolean,
    update: Parameters<typeof encodeUpdate>[0],
  ): Promise<TransitionResult> {
    const { keys, redis, settings } = this.#ctx;
    // Applied by the script only if this move really ends the capture.
    const metrics =
      to === 'succeeded' || to === 'failed' || to === 'cancelled'
        ? finishedIncrements({
            status: to,
            errorCode: update.error?.code ?? null,
            timings: update.timings ?? null,
            bytes: update.artifact === undefined || update.artifact === null ? null : { uncompressed: update.artifact.bytesUncompressed, stored: update.artifact.bytesStored },
          })
        : [];
    const reply = replyStrings(
      await withRedisDeadline(
        TRANSITION_SCRIPT.run(
          redis,
          [keys.record(captureId), keys.active(targetId), ...keys.statusIndexes(), keys.finishedMetrics()],
          [to, from.join(','), attempt === undefined ? '' : String(attempt), new Date().toISOString(), keys.doneChannel(), incrementAttempts ? '1' : '0', ...incrementArgs(metrics), ...encodeUpdate(update)],
        ),
        settings.redisTimeoutMs,
        `transition to ${to}`,
      ),
    );
    const [word, status, attempts] = reply;
    if (word === 'ok') return { ok: true, status: status as CaptureStatus, attempts: Number(attempts) };
    return {
      ok: false,
      reason: word as 'missing' | 'terminal' | 'conflict' | 'stale',
      status: (status as CaptureStatus | undefined) ?? null,
      attempts: Number(attempts ?? 0),
    };
  }
}
