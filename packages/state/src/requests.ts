/** requestCapture: join a queued/running capture, replay an Idempotency-Key, or create and enqueue. */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { QueueError } from './errors.ts';
import { newCaptureId } from '@heapcap/config';
import { enqueueCapture } from './jobs.ts';
import { AttemptRecorder } from './attempts.ts';
import { getCapture } from './records.ts';
import { WorkerDirectory } from './workers.ts';
import { decodeRecord, encodeRecord } from './record-codec.ts';
import { REQUEST_SCRIPT } from './lua-captures.ts';
import { hashFromReply } from './reply.ts';
import { noWorkerError } from './no-worker.ts';
import { CaptureOptionsSchema, TriggerSchema, type CaptureRecord, type Target, type Trigger } from './schemas.ts';

/** Input of requestCapture. */
export interface RequestCaptureInput {
  /** A registered target id (the registry is the allowlist). */
  targetId: string;
  /** Capture options; omitted fields take their defaults. */
  options?: z.input<typeof CaptureOptionsSchema> | undefined;
  trigger: Trigger;
  /** Start a new capture even when one of this target is queued or running (it then waits for the target lock). */
  force?: boolean | undefined;
  /** Same key (per trigger.who) within the TTL (24 h) → the same capture; a different request with it → QueueError idempotency_key_reused. */
  idempotencyKey?: string | undefined;
}

/** Outcome of requestCapture; exactly one of created / coalesced / replayed is true. */
export interface RequestCaptureResult {
  record: CaptureRecord;
  /** A new capture was created and enqueued (HTTP 202). */
  created: boolean;
  /** Joined a queued or running capture of the same target (HTTP 200, `coalesced: true`). */
  coalesced: boolean;
  /** The Idempotency-Key was seen before: this is the capture it created or joined. */
  replayed: boolean;
}

/** Create, join or replay a capture; see RequestCaptureInput. Resolves the target through `lookup`. */
export async function requestCapture(
  ctx: QueueContext,
  lookup: (id: string) => Promise<Target | null>,
  input: RequestCaptureInput,
): Promise<RequestCaptureResult> {
  const options = CaptureOptionsSchema.parse(input.options ?? {});
  const trigger = TriggerSchema.parse(input.trigger);
  const target = await lookup(input.targetId);
  if (target === null) throw new QueueError('target_not_found', `no target "${input.targetId}" in the registry`, { targetId: input.targetId });
  const force = input.force === true;
  // A continuous profile's read joins only another read (a one-off profile samples a window of its own).
  const joinKind = options.kind === 'snapshot' && options.redact === 'strings' ? 'snapshot+redact' : options.readRunning === true ? 'sampling+read' : options.kind;
  const now = Date.now();
  const iso = new Date(now).toISOString();
  const record: CaptureRecord = {
    id: newCaptureId(now),
    targetId: target.id,
    labels: target.labels,
    trigger,
    options,
    status: 'queued',
    phase: null,
    error: null,
    timings: null,
    artifact: null,
    attempts: 0,
    pinned: null,
    expired: null,
    coalesced: 0,
    createdAt: iso,
    startedAt: null,
    finishedAt: null,
    updatedAt: iso,
  };
  const { keys, settings } = ctx;
  const idemKey = input.idempotencyKey === undefined ? keys.idempotency('', 'none') : keys.idempotency(trigger.who, input.idempotencyKey);
  // What makes two requests "the same" for an Idempotency-Key.
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([target.id, options, force, trigger.reason ?? null]))
    .digest('hex')
    .slice(0, 32);
  const requestScript = (active: readonly string[]): Promise<unknown> =>
    withRedisDeadline(
      REQUEST_SCRIPT.run(
        ctx.redis,
        [
          idemKey,
          keys.active(target.id),
          keys.record(record.id),
          keys.indexAll(),
          keys.indexTarget(target.id),
          keys.indexStatus('queued'),
          keys.indexTrigger(trigger.kind),
          // Declared either way (scripts name every key they may touch); written only for a schedule's capture.
          trigger.scheduleId === undefined ? keys.indexTrigger(trigger.kind) : keys.indexSchedule(trigger.scheduleId),
          ...active.map((id) => keys.record(id)),
        ],
        [
          input.idempotencyKey === undefined ? '0' : '1',
          fingerprint,
          settings.idempotencyTtlMs,
          force ? '1' : '0',
          record.id,
          now,
          keys.recordPrefix,
          iso,
          trigger.scheduleId === undefined ? '0' : '1',
          // A sampling profile never joins a snapshot (nor the reverse): they answer different questions.
          // A request for redaction joins only a capture that asked for it too (and one without, only one
          // without): target and service default are the same for both, so the joined artifact is redacted
          // exactly as this request would have had it.
          joinKind,
          ...encodeRecord(record, { kind: joinKind, ...(force ? { forced: '1' } : {}), ...(target.placement === undefined ? {} : { placement: target.placement }) }),
        ],
      ),
      settings.redisTimeoutMs,
      'requestCapture',
    );
  let reply: unknown;
  for (let tries = 1; ; tries++) {
    // The records the script may join are named by the active set's members: read them first so the
    // script declares them (Redis Cluster); the script answers 'stale' when the set changed meanwhile.
    const active = force ? [] : await withRedisDeadline(ctx.redis.zrevrange(keys.active(target.id), 0, -1), settings.redisTimeoutMs, 'requestCapture');
    reply = await requestScript(active);
    if (!Array.isArray(reply) || reply[0] !== 'stale') break;
    // Each 'stale' means another request or a finish changed the set; many in a row is not contention but a fault.
    if (tries >= 20) throw new QueueError('redis_unavailable', `the active captures of ${target.id} kept changing under requestCapture`);
  }
  const [outcome, id, ...rest] = Array.isArray(reply) ? (reply as unknown[]) : [];
  if (outcome === 'created') {
    // Not atomic with the script: if this add fails, the record stays queued without a job
    // until a replay of the same Idempotency-Key or the worker's reconciler enqueues it.
    if (target.placement !== undefined) {
      const failed = await failIfNoWorker(ctx, record, target.placement);
      if (failed !== null) return { record: failed, created: true, coalesced: false, replayed: false };
    }
    await enqueueCapture(ctx, record.id, target.id, target.placement);
    return { record, created: true, coalesced: false, replayed: false };
  }
  if (outcome === 'joined') {
    const joined = decodeRecord(hashFromReply(rest));
    if (joined === null) throw new Error(`joined capture ${String(id)} vanished`);
    return { record: joined, created: false, coalesced: true, replayed: false };
  }
  if (typeof id !== 'string') throw new Error(`unexpected requestCapture reply ${JSON.stringify(reply)}`);
  if (outcome === 'reused') {
    throw new QueueError('idempotency_key_reused', 'this Idempotency-Key was used with a different request in the last 24 h', { captureId: id });
  }
  const hash = await ctx.redis.hgetall(keys.record(id));
  const existing = decodeRecord(hash);
  if (existing === null) throw new Error(`capture ${id} of an Idempotency-Key vanished`);
  // A replay is the client retrying, maybe because our enqueue failed: make sure the job exists.
  if (existing.status === 'queued') await enqueueCapture(ctx, existing.id, existing.targetId, target.placement);
  return { record: existing, created: false, coalesced: false, replayed: true };
}

/**
 * A placed target's new capture: when no live worker consumes its placement,
 * fail the record at once with no_worker_for_target (instead of a job nobody
 * takes) and return it; otherwise note the placement (its queue now exists) and return null.
 */
async function failIfNoWorker(ctx: QueueContext, record: CaptureRecord, placement: string): Promise<CaptureRecord | null> {
  if (await new WorkerDirectory(ctx).noteAndCheck(placement)) return null;
  await new AttemptRecorder(ctx).abandon(record.id, record.targetId, noWorkerError(placement));
  return (await getCapture(ctx, record.id)) ?? record;
}
