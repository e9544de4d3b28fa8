/**
 * One `capture` job: payload → record → target lock → runCapture → record.
 * Every exit path releases the lock and leaves the record in a state that
 * says what happened; the thrown error tells BullMQ whether to retry.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { runCapture, targetToEndpoint } from '@heapcap/cli';
import { toCaptureError, type CaptureError } from '@heapcap/errors';
import { CaptureJobSchema, isTerminal, type CaptureRecord, type HeapcapQueue, type Target } from '@heapcap/queue';
import type { ArtifactSink } from '@heapcap/storage';
import { startLease } from './lease.ts';
import { RETRY_CODES, type WorkerTuning } from './options.ts';
import { settleTarget } from './settle.ts';

/** Why a running capture was aborted (the abort reason of its signal). */
export type AbortKind = 'cancel' | 'shutdown' | 'lock_lost';

export interface ProcessorDeps {
  queue: HeapcapQueue;
  sink: ArtifactSink;
  log: Logger;
  tuning: WorkerTuning;
  memoryCeilingBytes?: number | undefined;
  spillDir?: string | undefined;
}

/** Phases during which the target may still be producing a snapshot we abandoned. */
const SNAPSHOT_PHASES = new Set(['generate', 'serialize', 'sink']);

/** The BullMQ processor. Declares three parameters: BullMQ passes the AbortSignal only then. */
export function createProcessor(deps: ProcessorDeps): (job: Job<unknown>, token: string | undefined, signal: AbortSignal | undefined) => Promise<void> {
  return (job, token, signal) => processCapture(deps, job, token ?? '', signal);
}

async function processCapture(deps: ProcessorDeps, job: Job<unknown>, token: string, bullSignal: AbortSignal | undefined): Promise<void> {
  const { queue, tuning } = deps;
  const parsed = CaptureJobSchema.safeParse(job.data);
  if (!parsed.success) {
    deps.log.error({ jobId: job.id, issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 'bad capture job payload; failing it without retries');
    throw new UnrecoverableError(`invalid_input: bad capture job payload`);
  }
  const { captureId, targetId } = parsed.data;
  const log = deps.log.child({ captureId, targetId, jobId: job.id });
  const before = await queue.attempts.get(captureId);
  if (before === null) throw new UnrecoverableError(`invalid_input: no capture record ${captureId}`);
  if (isTerminal(before)) {
    log.info({ status: before.status }, 'capture already finished; nothing to do');
    return;
  }
  const entry = await queue.targets.get(targetId);
  if (entry === null) {
    await queue.attempts.abandon(captureId, targetId, { code: 'target_not_found', message: `target "${targetId}" is no longer registered` });
    log.warn('target removed from the registry; capture failed');
    throw new UnrecoverableError('target_not_found');
  }

  const lockToken = `${captureId}:${token}`;
  if (!(await queue.locks.acquire(targetId, lockToken, tuning.targetLeaseMs))) {
    // Another capture holds the target: come back later without spending an attempt.
    await queue.increment('lock_waits').catch(() => undefined);
    const delay = Math.round(tuning.lockRetryMs * (1 + Math.random() * 0.5));
    log.debug({ delayMs: delay }, 'target busy; retrying later');
    await job.moveToDelayed(Date.now() + delay, token);
    throw new DelayedError();
  }
  try {
    await runAttempt({ deps, job, token, bullSignal, log, target: entry.target, captureId, lockToken, record: before });
  } finally {
    await queue.locks.release(targetId, lockToken).catch((err: unknown) => log.warn({ err }, 'could not release the target lock; its lease will expire'));
  }
}

interface AttemptInput {
  deps: ProcessorDeps;
  job: Job<unknown>;
  token: string;
  bullSignal: AbortSignal | undefined;
  log: Logger;
  target: Target;
  captureId: string;
  lockToken: string;
  /** The record as it was before this attempt started. */
  record: CaptureRecord;
}

async function runAttempt(a: AttemptInput): Promise<void> {
  const { deps, captureId, target } = a;
  const { queue, tuning } = deps;
  const sink = deps.sink;
  const started = await queue.attempts.start(captureId, target.id);
  if (!started.ok) {
    a.log.info({ reason: started.reason, status: started.status }, 'capture not startable; skipping');
    return;
  }
  const attempt = started.attempts;
  const startedAtMs = Date.now();
  const log = a.log.child({ attempt });
  const { options } = a.record;
  const gzip = options.gzip;
  if (attempt > 1 && a.record.startedAt !== null) {
    // An earlier attempt died mid-upload: remove whatever it left (temp file, open multipart upload).
    await sink.remove({ captureId, targetId: target.id, startedAt: new Date(a.record.startedAt), gzip }).catch((err: unknown) => log.warn({ err }, 'could not clean up the previous attempt'));
  }

  const controller = new AbortController();
  const abort = (kind: AbortKind): void => {
    if (!controller.signal.aborted) controller.abort(kind);
  };
  const onBullAbort = (): void => abort(a.bullSignal?.reason === 'shutdown' ? 'shutdown' : 'cancel');
  a.bullSignal?.addEventListener('abort', onBullAbort, { once: true });
  if (a.bullSignal?.aborted === true) onBullAbort();
  const lease = startLease({
    queue,
    targetId: target.id,
    captureId,
    token: a.lockToken,
    leaseMs: tuning.targetLeaseMs,
    log,
    onLost: () => abort('lock_lost'),
    onCancelFlag: () => abort('cancel'),
  });
  let phase: string | null = null;
  let phaseWrites: Promise<unknown> = Promise.resolve();
  const endpoint = targetToEndpoint(target);
  try {
    if (await queue.attempts.cancelRequested(captureId)) abort('cancel');
    log.info('capture started');
    const out = await runCapture({
      captureId,
      targetId: target.id,
      endpoint,
      labels: target.labels,
      sink,
      gzip,
      warm: options.warm,
      gc: options.gc,
      exposeInternals: options.exposeInternals,
      captureNumericValue: options.captureNumericValue,
      // The headroom gate: `forceHeadroom` overrides a refusal (recorded in the manifest).
      force: options.forceHeadroom,
      ...(target.memoryLimitBytes === undefined ? {} : { memoryLimitBytes: target.memoryLimitBytes }),
      ...(deps.memoryCeilingBytes === undefined ? {} : { memoryCeilingBytes: deps.memoryCeilingBytes }),
      spillDir: deps.spillDir,
      trigger: a.record.trigger,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.phase === phase) return;
        phase = p.phase;
        const name = p.phase;
        log.debug({ phase: name }, 'phase');
        // In order, one at a time; a failed write only costs the live phase display.
        phaseWrites = phaseWrites.then(() => queue.attempts.phase(captureId, target.id, attempt, name)).catch((err: unknown) => log.warn({ err }, 'could not record the phase'));
      },
    });
    await phaseWrites;
    const timings = { queued: Math.max(0, startedAtMs - Date.parse(a.record.createdAt)), ...out.result.timings };
    const done = await queue.attempts.succeed(captureId, target.id, attempt, timings, {
      key: out.stored.key,
      manifestKey: out.manifestKey,
      location: out.stored.location,
      bytesUncompressed: out.stored.bytesUncompressed,
      bytesStored: out.stored.bytesStored,
      sha256: out.stored.sha256,
      gzip: out.stored.gzip,
    });
    if (!done.ok) log.warn({ reason: done.reason, status: done.status }, 'capture finished but the record had moved on');
    log.info({ timings, bytesStored: out.stored.bytesStored, key: out.stored.key }, 'capture succeeded');
  } catch (err) {
    await phaseWrites;
    const error = toCaptureError(err);
    const kind = controller.signal.aborted ? (controller.signal.reason as AbortKind) : undefined;
    // On shutdown there is no time to wait; the lock's lease covers the target for a while anyway.
    if (kind !== 'shutdown' && error.phase !== undefined && SNAPSHOT_PHASES.has(error.phase)) {
      const settled = await settleTarget(endpoint, tuning.settleTimeoutMs);
      log.info({ settled }, 'waited for the target to finish the abandoned snapshot');
    }
    await finishFailed({ ...a, log, attempt, error, kind });
  } finally {
    lease.stop();
    a.bullSignal?.removeEventListener('abort', onBullAbort);
  }
}

async function finishFailed(a: AttemptInput & { attempt: number; error: CaptureError; kind: AbortKind | undefined }): Promise<never> {
  const { queue } = a.deps;
  const { error, attempt, captureId, target, log } = a;
  const phase = error.phase ?? null;
  const timings = error.timings ?? null;
  if (a.kind === 'cancel') {
    await queue.attempts.cancelled(captureId, target.id, attempt, phase, timings);
    log.info({ phase }, 'capture cancelled');
    throw new UnrecoverableError('cancelled');
  }
  if (a.kind === 'shutdown') {
    // Not the capture's fault: hand it back to the queue for another worker, without spending an attempt.
    await queue.attempts.release(captureId, target.id, attempt);
    log.warn({ phase }, 'worker shutting down; capture handed back to the queue');
    await a.job.moveToDelayed(Date.now(), a.token);
    throw new DelayedError();
  }
  const retry = a.kind === undefined && RETRY_CODES.has(error.code) && a.job.attemptsMade + 1 < (a.job.opts.attempts ?? 1);
  const info = {
    code: a.kind === 'lock_lost' ? 'internal' : error.code,
    message: a.kind === 'lock_lost' ? 'lost the target lock while capturing (lease expired)' : error.message,
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    ...(phase === null ? {} : { phase }),
  };
  await queue.attempts.fail(captureId, target.id, attempt, info, timings, retry);
  log.warn({ code: info.code, phase, retry, attemptsMade: a.job.attemptsMade }, retry ? 'capture failed; will retry' : 'capture failed');
  if (retry) throw new Error(`${info.code}: ${info.message}`);
  throw new UnrecoverableError(`${info.code}: ${info.message}`);
}
