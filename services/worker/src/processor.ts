/**
 * One `capture` job: payload → record → target lock → runCapture → record.
 * Every exit path releases the lock and leaves the record in a state that
 * says what happened; every attempt ends in exactly one outcome log line
 * (saying whether the record took it); the thrown error tells BullMQ whether
 * to retry.
 */
import { Backoffs, DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { redactUrlsInText, type CaptureProgress, type SamplingProgress } from '@heapcap/capture';
import { runCapture, type RunCaptureOutput, type RunSamplingOutput } from '@heapcap/pipeline';
import { toCaptureError, type CaptureError } from '@heapcap/errors';
import { resolveRedaction, type RedactMode } from '@heapcap/config';
import { CaptureJobSchema, isQueueError, type CaptureRecord, type BeginResult, type HeapcapQueue, type Target, type TransitionResult } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { startLease } from './lease.ts';
import type { WorkerTuning } from './options.ts';
import { settleTarget, type SettleResult } from './settle.ts';
import { targetToEndpoint } from './target-endpoint.ts';
import { recordGrowth } from './growth.ts';
import { recordGrowthBySite, requestProfileBeside } from './beside-profile.ts';

/** Why a running capture was aborted (the abort reason of its signal). */
export type AbortKind = 'cancel' | 'shutdown' | 'lock_lost';

export interface ProcessorDeps {
  queue: HeapcapQueue;
  sink: ArtifactStore;
  log: Logger;
  tuning: WorkerTuning;
  memoryCeilingBytes?: number | undefined;
  spillDir?: string | undefined;
  snapshotTransport?: 'auto' | 'cdp' | 'pipe' | undefined;
  pipeDir?: string | undefined;
  /** HEAPCAP_REDACT: redaction when neither the request nor the target says (default none). */
  redact?: RedactMode | undefined;
  /** The N largest strings in each summary (HEAPCAP_SUMMARY_LARGEST_STRINGS); 0 or absent: none. */
  summaryLargestStrings?: number | undefined;
  /** Written into the record of every attempt this worker starts. */
  workerId?: string | undefined;
}

/** How long a phase runs before the record shows it (a shorter one is never written: the next, or the outcome, follows). */
const PHASE_WRITE_DELAY_MS = 250;

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
  const lockToken = `${captureId}:${token}`;
  // One round trip: the record, the target, its lock, the start of the attempt, the headroom history.
  const begun = await queue.attempts.begin(captureId, targetId, lockToken, tuning.targetLeaseMs, deps.workerId).catch(async (err: unknown) => {
    // A record that does not decode is found after the lock was taken: give it back (only if it is ours).
    await queue.locks.release(targetId, lockToken).catch(() => undefined);
    throw err;
  });
  if (begun.kind === 'missing') {
    // A job without its record: Redis lost its data between the two (the job is all that is left; the process
    // that accepted the capture writes its record again when it notices the loss).
    log.error({ code: 'redis_data_lost' }, 'capture job without a record (Redis lost its data?): not run');
    throw new UnrecoverableError(`invalid_input: no capture record ${captureId}`);
  }
  if (begun.kind === 'terminal') {
    log.info({ status: begun.status }, 'capture already finished; nothing to do');
    return;
  }
  if (begun.kind === 'no_target') {
    await queue.attempts.abandon(captureId, targetId, { code: 'target_not_found', message: `target "${targetId}" is no longer registered` });
    log.warn('target removed from the registry; capture failed');
    throw new UnrecoverableError('target_not_found');
  }
  if (begun.kind === 'busy') {
    // Another capture holds the target: come back later without spending an attempt.
    await queue.increment('lock_waits').catch(() => undefined);
    const delay = Math.round(tuning.lockRetryMs * (1 + Math.random() * 0.5));
    log.debug({ delayMs: delay }, 'target busy; retrying later');
    await job.moveToDelayed(Date.now() + delay, token);
    throw new DelayedError();
  }
  const before = begun.record;
  if (begun.entry instanceof Error) {
    // Stored before a validation rule was added, and failing it now: the capture cannot run until the entry is
    // replaced; end this attempt with the registry's message rather than retrying it.
    const { code, message } = begun.entry;
    await queue.attempts.fail(captureId, targetId, begun.attempt, { code, message }, null, false).catch((err: unknown) => log.warn({ err }, 'could not record the outcome of the attempt'));
    await queue.locks.release(targetId, lockToken).catch(() => undefined);
    log.warn({ outcome: 'failed', code }, 'the target’s registry entry no longer validates; capture failed');
    throw new UnrecoverableError(`${code}: ${message}`);
  }
  const entry = begun.entry;
  // The lease is renewed for everything done under the lock, from here to its release: the previous attempt's
  // cleanup, the capture, settling the target, writing the outcome (issue 25: a cleanup of 34 s with the store
  // down outlived an unrenewed 30 s lease, and the target was free for another worker meanwhile).
  const controller = new AbortController();
  const lock: LockWatch = { lostInPhase: undefined, phase: null, attempt: undefined, finishing: false, recovering: undefined };
  const lease = startLease({
    queue,
    targetId,
    captureId,
    token: lockToken,
    leaseMs: tuning.targetLeaseMs,
    log,
    onLost: () => {
      lock.lostInPhase ??= lock.phase;
      if (!controller.signal.aborted) controller.abort('lock_lost' satisfies AbortKind);
    },
    onCancelFlag: () => {
      if (!controller.signal.aborted) controller.abort('cancel' satisfies AbortKind);
    },
    // Redis lost its data while this attempt ran (issue 25, defect 4): the lock and the record are gone, and
    // nobody else can hold the target before our reconnect renews (or another worker's lease outlives ours).
    // Take the lock again and write the record as running, so the capture ends as it would have.
    recover: () => {
      // The outcome being written does its own re-creation (recordAgainIfLost); it waits for a recovery in flight.
      if (lock.finishing) return Promise.resolve('finishing');
      const recovering = (async (): Promise<'recovered' | 'lost'> => {
        const running = lock.attempt;
        if (running === undefined || !(await queue.attempts.lostWithRedis(captureId))) return 'lost';
        if (!(await queue.locks.acquire(targetId, lockToken, tuning.targetLeaseMs))) return 'lost';
        const now = new Date().toISOString();
        await queue.attempts.restore({ ...before, status: 'running', phase: lock.phase, error: null, attempts: running.attempt, startedAt: running.startedAt, finishedAt: null, updatedAt: now });
        queue.epoch.countLostCaptures('running');
        return 'recovered';
      })();
      lock.recovering = recovering.catch(() => 'lost');
      return recovering;
    },
  });
  try {
    await runAttempt({ deps, job, token, bullSignal, log, target: entry.target, captureId, record: before, controller, lock, begun });
  } finally {
    lease.stop();
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
  /** The record as it was before this attempt started. */
  record: CaptureRecord;
  /** Aborted on cancel, shutdown or a lost lock (its reason: the AbortKind). */
  controller: AbortController;
  lock: LockWatch;
  /** What the attempt's first round trip found: its number, the cancel flag, the headroom history. */
  begun: Extract<BeginResult, { kind: 'started' }>;
}

/** The attempt's live phase, and the phase it was in when the lease found the lock gone (undefined: not lost). */
interface LockWatch {
  phase: string | null;
  lostInPhase: string | null | undefined;
  /** The attempt once started (its number and start), for writing the record again after a Redis data loss. */
  attempt: { attempt: number; startedAt: string } | undefined;
  /** Set when the attempt starts writing its outcome: the lease no longer writes the record. */
  finishing: boolean;
  /** The lease's recovery after a Redis data loss, while one runs: the outcome waits for it. */
  recovering: Promise<unknown> | undefined;
}

/**
 * Waits for `work` at most `ms`; false when it did not finish in time (it goes on, unawaited). Late is
 * decided from setImmediate, after the loop turn has read the sockets (a stall of this process is not
 * the work's lateness).
 */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => setImmediate(() => resolve(false)), ms)));
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function runAttempt(a: AttemptInput): Promise<void> {
  const { deps, captureId, target } = a;
  const { queue, tuning } = deps;
  const sink = deps.sink;
  const attempt = a.begun.attempt;
  const startedAtMs = Date.now();
  a.lock.attempt = { attempt, startedAt: new Date(startedAtMs).toISOString() };
  const log = a.log.child({ attempt });
  const { options } = a.record;
  const gzip = options.gzip;
  const { controller } = a;
  const abort = (kind: AbortKind): void => {
    if (!controller.signal.aborted) controller.abort(kind);
  };
  const onBullAbort = (): void => abort(a.bullSignal?.reason === 'shutdown' ? 'shutdown' : 'cancel');
  a.bullSignal?.addEventListener('abort', onBullAbort, { once: true });
  if (a.bullSignal?.aborted === true) onBullAbort();
  let phase: string | null = null;
  let phaseWrites: Promise<unknown> = Promise.resolve();
  let phaseStartedAt = '';
  // The live progress (record.progress): written with each phase, and while the snapshot's bytes
  // arrive once a second (from a timer: a stalled stream still shows its falling rate), never behind
  // another write, so a fast stream costs Redis one small HSET a second.
  let progressWrittenAt = 0;
  let progressPending = false;
  let bytesSoFar = 0;
  // The progress a queued write will record when it starts (null: no write waiting).
  let nextProgress: { phase: string; phaseStartedAt: string; at: string; bytes: number } | null = null;
  // Written PHASE_WRITE_DELAY_MS after it is entered, not at once: a capture of a small heap runs all its phases
  // (connect … sink) in a few tens of milliseconds and its outcome overwrites them, so writing each cost Redis round
  // trips no one could read (the largest share of the worker's own Redis writes in a profile of bench/scale.ts).
  let phaseTimer: NodeJS.Timeout | undefined;
  const sendProgress = (): void => {
    clearTimeout(phaseTimer);
    phaseTimer = undefined;
    phaseWrites = phaseWrites
      .then(() => {
        const write = nextProgress;
        if (write === null) return;
        nextProgress = null;
        return queue.attempts.phase(captureId, target.id, attempt, write.phase, write);
      })
      .catch((err: unknown) => log.warn({ err }, 'could not record the phase'))
      .finally(() => (progressPending = nextProgress !== null));
  };
  /** The phase writes done; `pending`: `send` the one still waiting for its delay now, or `drop` it (the outcome follows). */
  const phaseWritesDone = (pending: 'send' | 'drop'): Promise<unknown> => {
    if (phaseTimer !== undefined) {
      if (pending === 'send') sendProgress();
      else {
        clearTimeout(phaseTimer);
        phaseTimer = undefined;
        nextProgress = null;
        progressPending = false;
      }
    }
    return phaseWrites;
  };
  const writeProgress = (name: string, bytes: number): void => {
    const now = new Date();
    progressWrittenAt = now.getTime();
    progressPending = true;
    // In order, one at a time; a failed write only costs the live phase display. Phases entered while a write is
    // waiting collapse into the newest: a phase shorter than the delay would be overwritten at once anyway.
    const waiting = nextProgress !== null;
    nextProgress = { phase: name, phaseStartedAt, at: now.toISOString(), bytes };
    if (waiting) return;
    phaseTimer = setTimeout(sendProgress, PHASE_WRITE_DELAY_MS);
  };
  const setPhase = (name: string, bytes = 0): void => {
    phase = name;
    a.lock.phase = name;
    phaseStartedAt = new Date().toISOString();
    bytesSoFar = bytes;
    writeProgress(name, bytes);
  };
  const bytesTimer = setInterval(() => {
    if (phase !== null && bytesSoFar > 0 && !progressPending && Date.now() - progressWrittenAt >= 1000) writeProgress(phase, bytesSoFar);
  }, 500);
  bytesTimer.unref();
  const previousStart = attempt > 1 ? a.record.startedAt : null;
  const cleanedUp = previousStart !== null;
  if (previousStart !== null) {
    // An earlier attempt died mid-upload: remove whatever it left (temp file, open multipart upload). The store
    // may be what failed it: wait at most previousCleanupTimeoutMs, and not past a cancel or a lost lock.
    setPhase('cleanup');
    const removing = sink.remove({ captureId, targetId: target.id, startedAt: new Date(previousStart), gzip }).catch((err: unknown) => log.warn({ err }, 'could not clean up the previous attempt'));
    const stopped = new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    if (!(await within(Promise.race([removing, stopped]), tuning.previousCleanupTimeoutMs))) {
      log.warn({ timeoutMs: tuning.previousCleanupTimeoutMs }, 'the previous attempt’s cleanup did not finish in time; going on without it');
    }
  }
  const endpoint = targetToEndpoint(target);
  let outcome: AttemptOutcome;
  try {
    // The flag as the attempt's start read it; after a cleanup of the previous attempt (which may have taken
    // long) read it again, in case the pub/sub message of a cancel meanwhile was missed.
    if (a.begun.cancelRequested || (cleanedUp && (await queue.attempts.cancelRequested(captureId)))) abort('cancel');
    const headroom = a.begun.headroom;
    const previous = headroom === null ? null : { heapUsedBytes: headroom.heapUsedBytes, extraBytes: headroom.extraBytes };
    log.info('capture started');
    const onProgress = (p: CaptureProgress | SamplingProgress): void => {
      const bytes = 'bytes' in p ? p.bytes : 0;
      if (p.phase === phase) {
        bytesSoFar = bytes;
        return;
      }
      log.debug({ phase: p.phase }, 'phase');
      setPhase(p.phase, bytes);
    };
    const common = { ids: { captureId, targetId: target.id }, store: sink, gzip, labels: target.labels, trigger: a.record.trigger };
    const { signal } = controller;
    const out = await runCapture(
      options.kind === 'sampling'
        ? {
            ...common,
            kind: 'sampling',
            sampling: { endpoint, durationMs: options.samplingSeconds * 1000, samplingIntervalBytes: options.samplingIntervalBytes, readRunning: options.readRunning, signal, onProgress },
          }
        : {
            ...common,
            kind: 'snapshot',
            capture: {
              endpoint,
              warm: options.warm,
              gc: options.gc,
              exposeInternals: options.exposeInternals,
              captureNumericValue: options.captureNumericValue,
              // The headroom gate: `forceHeadroom` overrides a refusal (recorded in the manifest).
              force: options.forceHeadroom,
              memoryLimitBytes: target.memoryLimitBytes,
              headroom: previous === null ? undefined : { previous },
              memoryCeilingBytes: deps.memoryCeilingBytes,
              spillDir: deps.spillDir,
              transport: deps.snapshotTransport,
              pipeDir: deps.pipeDir,
              timeouts: { snapshotMs: tuning.snapshotTimeoutMs },
              signal,
              onProgress,
            },
            summary: (deps.summaryLargestStrings ?? 0) > 0 ? { largestStrings: deps.summaryLargestStrings } : {},
            redact: resolveRedaction(options.redact, target.redact, deps.redact ?? 'none'),
            // Writing the summary and the manifest: a phase of the record, not of the engine (no timing).
            onSummary: () => setPhase('summary'),
          },
    );
    await phaseWritesDone('drop');
    if (out.kind === 'snapshot') await recordCost(queue, target.id, out.result, log);
    const timings = { queued: Math.max(0, startedAtMs - Date.parse(a.record.createdAt)), ...out.result.timings };
    outcome = { kind: 'succeeded', timings, out };
  } catch (err) {
    await phaseWritesDone('drop');
    const error = toCaptureError(err);
    const kind = controller.signal.aborted ? (controller.signal.reason as AbortKind) : undefined;
    // The target may still be busy with what we asked of it (a snapshot, a GC, an enable): keep its lock
    // until it answers. Not on shutdown: there is no time to wait, and the lock's lease covers it a while.
    let settle: SettleResult | undefined;
    if (kind !== 'shutdown' && mayLeaveTargetBusy(error)) {
      setPhase('settle');
      await phaseWritesDone('send');
      settle = await settleTarget(endpoint, tuning.settleTimeoutMs);
      log.info({ settle }, 'waited for the target to finish what the failed attempt asked of it');
    }
    outcome = { kind: 'failed', error, abort: kind, settle };
  } finally {
    clearInterval(bytesTimer);
    // A progress write the byte timer queued after the last phase write: the outcome follows and overwrites it.
    void phaseWritesDone('drop');
    a.bullSignal?.removeEventListener('abort', onBullAbort);
  }
  await finishAttempt({ ...a, log, attempt, startedAt: new Date(startedAtMs).toISOString(), outcome });
}

/** Remember what this capture cost the target when its peak was measured; best effort. */
async function recordCost(queue: HeapcapQueue, targetId: string, result: RunCaptureOutput['result'], log: Logger): Promise<void> {
  const extraBytes = result.peak.actualExtraBytes;
  if (extraBytes === null || result.facts.pid === undefined) return;
  const sample = { heapUsedBytes: result.headroom.heapUsedBytes, extraBytes, pid: result.facts.pid, capturedAt: new Date().toISOString() };
  try {
    if (await queue.headroom.record(targetId, sample)) log.info({ headroom: sample }, 'recorded the snapshot cost for the next headroom estimate');
  } catch (err) {
    log.warn({ err }, 'could not record the snapshot cost for the next headroom estimate');
  }
}

/** How an attempt ended, before it is written down. */
type AttemptOutcome =
  | { kind: 'succeeded'; timings: Record<string, number>; out: RunCaptureOutput | RunSamplingOutput }
  | { kind: 'failed'; error: CaptureError; abort: AbortKind | undefined; settle: SettleResult | undefined };

/**
 * A failure that may leave the target busy: any protocol timeout (the target
 * did not answer what we asked: it may still be doing it), and any failure
 * while the snapshot itself was running.
 */
function mayLeaveTargetBusy(error: CaptureError): boolean {
  return error.code === 'protocol_timeout' || (error.phase !== undefined && SNAPSHOT_PHASES.has(error.phase));
}

/**
 * Retry a record write while Redis does not answer, up to `limitMs`; true once
 * written (or refused by the record's own rules), false when Redis stayed away.
 */
async function recordWithRetry(write: () => Promise<TransitionResult>, limitMs: number, log: Logger): Promise<{ recorded: boolean; result: TransitionResult | undefined }> {
  const deadline = Date.now() + limitMs;
  for (let pause = 250; ; pause = Math.min(pause * 2, 5_000)) {
    try {
      return { recorded: true, result: await write() };
    } catch (err) {
      if (!isQueueError(err) || err.code !== 'redis_unavailable' || Date.now() + pause > deadline) {
        log.warn({ err }, 'could not record the outcome of the attempt');
        return { recorded: false, result: undefined };
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** What finishAttempt writes about one attempt. */
type FinishInput = AttemptInput & { attempt: number; startedAt: string; outcome: AttemptOutcome };

/**
 * The record went with Redis's data while the attempt ran (issue 25 defect 4): the transition found it missing,
 * or found the `redis_data_lost` record the accepting process wrote again. Write it again as this attempt ended:
 * the artifacts it stored are then pointed to (retention deletes them in time), and a client polling the capture
 * reads its outcome instead of a 404. Returns the fields for the outcome log line (`recorded: false` then).
 */
async function recordAgainIfLost(a: FinishInput, result: TransitionResult | undefined, ended: Pick<CaptureRecord, 'status' | 'phase' | 'error' | 'timings' | 'artifact' | 'redaction'>): Promise<{ recorded?: false; recordLost?: true; recordedAgain?: boolean }> {
  if (result === undefined || result.ok || (result.reason !== 'missing' && result.reason !== 'terminal')) return {};
  const { queue } = a.deps;
  const now = new Date().toISOString();
  let again: 'restored' | 'exists';
  try {
    again = await queue.attempts.restore({ ...a.record, ...ended, attempts: a.attempt, startedAt: a.startedAt, finishedAt: now, updatedAt: now });
  } catch (err) {
    a.log.error({ err, code: 'redis_data_lost' }, 'the capture record was lost with Redis’s data and could not be written again');
    queue.epoch.countLostCaptures('running');
    return { recorded: false, recordLost: true, recordedAgain: false };
  }
  if (again === 'exists') return {};
  queue.epoch.countLostCaptures('running');
  a.log.error(
    { code: 'redis_data_lost', status: ended.status, key: ended.artifact?.key },
    `the capture record was lost with Redis’s data while the capture ran: written again as ${ended.status}${ended.artifact === null ? '' : ' (it points to the stored artifacts)'}`,
  );
  return { recorded: false, recordLost: true, recordedAgain: true };
}

/**
 * The outcome's timings with `total` from the first failed attempt's start to now, when earlier attempts failed
 * (a retried capture's total counts its retries and their backoff); the phases stay this attempt's.
 */
function sinceFirstAttempt(a: FinishInput, timings: Record<string, number> | null): Record<string, number> | null {
  const first = a.record.failedAttempts?.[0]?.startedAt;
  if (timings === null || first === undefined) return timings;
  return { ...timings, total: Math.max(timings['total'] ?? 0, Date.now() - Date.parse(first)) };
}

/**
 * The record's failed attempts with this one added (undefined: none retried, and no retry follows): its number
 * of BullMQ's attempts, its error, and when BullMQ's backoff (the job's own options) runs the next.
 */
function attemptsAfterFailure(a: FinishInput, info: { code: string; message: string; phase?: string }, retry: boolean): CaptureRecord['failedAttempts'] {
  const earlier = a.record.failedAttempts;
  if (!retry && earlier === undefined) return undefined;
  const failedAt = Date.now();
  const made = a.job.attemptsMade + 1;
  const backoff = a.job.opts.backoff === undefined ? undefined : Backoffs.normalize(a.job.opts.backoff);
  // The same calculation BullMQ makes when this attempt's error reaches it (no jitter in our options: the same delay).
  const delay = retry && backoff !== undefined ? Backoffs.calculate(backoff, made, new Error(info.code), a.job) : undefined;
  const delayMs = typeof delay === 'number' && delay >= 0 ? delay : 0;
  return [
    ...(earlier ?? []),
    {
      attempt: made,
      of: a.job.opts.attempts ?? 1,
      code: info.code,
      message: info.message,
      ...(info.phase === undefined ? {} : { phase: info.phase }),
      startedAt: a.startedAt,
      failedAt: new Date(failedAt).toISOString(),
      nextAttemptAt: retry ? new Date(failedAt + delayMs).toISOString() : null,
    },
  ];
}

/**
 * Write the attempt's outcome to the record, log it in exactly one outcome
 * line, and tell BullMQ what follows (throwing the error that decides retry).
 */
async function finishAttempt(a: FinishInput): Promise<void> {
  // A record the lease is writing back after a Redis data loss must be there before the outcome's transition
  // reads it: else both re-create it, and the outcome's finds the lease's `running` one and gives way to it.
  a.lock.finishing = true;
  await a.lock.recovering;
  const { queue, tuning } = a.deps;
  const { attempt, captureId, target, log, outcome } = a;
  const limit = tuning.recordRetryMs;
  if (outcome.kind === 'succeeded') {
    const { out, timings } = outcome;
    const artifact = {
      key: out.stored.key,
      manifestKey: out.manifestObject.key,
      location: out.stored.location,
      bytesUncompressed: out.stored.bytesUncompressed,
      bytesStored: out.stored.bytesStored,
      sha256: out.stored.sha256,
      gzip: out.stored.gzip,
      ...(out.kind === 'sampling-profile' ? { kind: out.kind } : {}),
      ...(out.summary.kind === 'stored' ? { summaryKey: out.summary.key } : {}),
      ...(out.summary.kind === 'failed' ? { summaryError: `${out.summary.code}: ${out.summary.message}` } : {}),
    };
    // The mode the snapshot ran with (the request's raised by the target's and the service's) and the manifest's counts.
    const redaction = out.kind === 'snapshot' ? out.manifest.redaction : undefined;
    const written = await recordWithRetry(() => queue.attempts.succeed(captureId, target.id, attempt, sinceFirstAttempt(a, timings) ?? timings, artifact, redaction), limit, log);
    const { result } = written;
    const lost = await recordAgainIfLost(a, result, { status: 'succeeded', phase: null, error: null, timings, artifact, ...(redaction === undefined ? {} : { redaction }) });
    const recorded = lost.recorded ?? written.recorded;
    const moved = result !== undefined && !result.ok && lost.recordLost !== true ? { recordMovedOn: result.reason, recordStatus: result.status } : {};
    const summary = out.summary.kind === 'failed' ? { summaryError: out.summary.code } : { summary: out.summary.kind };
    log.info({ outcome: 'succeeded', recorded, ...lost, ...moved, ...(redaction === undefined ? {} : { redact: redaction.mode }), timings, bytesStored: out.stored.bytesStored, key: out.stored.key, ...summary }, 'capture succeeded');
    // Unrecorded: the job fails and the reconciler settles the record; the artifact is complete and stays.
    if (!written.recorded) throw new UnrecoverableError('internal: the capture succeeded but Redis did not take its record');
    if (lost.recordLost === true) throw new UnrecoverableError('redis_data_lost: the capture succeeded; its record went with Redis’s data');
    // A scheduled capture answers "what grew since the last one?" on its record.
    if (result?.ok === true && a.record.trigger.kind === 'schedule' && out.kind === 'snapshot' && out.summary.kind === 'stored') {
      await recordGrowth({ queue, sink: a.deps.sink, log }, a.record, out.summary.summary);
    }
    // A continuous profile runs in the target: one beside the snapshot, and the profile beside a snapshot grows its `growth`.
    if (result?.ok === true && out.kind === 'snapshot') await requestProfileBeside({ queue, log }, a.record);
    if (result?.ok === true && out.kind === 'sampling-profile') await recordGrowthBySite({ queue, sink: a.deps.sink, log }, a.record);
    return;
  }
  const { error, abort, settle } = outcome;
  // A lost lock is recorded in the phase the attempt was in when the lease found it gone (the engine's error may
  // come from before it started, or name an earlier phase).
  const lostInPhase = abort === 'lock_lost' ? a.lock.lostInPhase : undefined;
  const phase = lostInPhase ?? error.phase ?? null;
  const timings = error.timings ?? null;
  if (abort === 'cancel') {
    const written = await recordWithRetry(() => queue.attempts.cancelled(captureId, target.id, attempt, phase, timings), limit, log);
    const error = { code: 'cancelled', message: 'cancelled while running', ...(phase === null ? {} : { phase }) };
    const lost = await recordAgainIfLost(a, written.result, { status: 'cancelled', phase, error, timings, artifact: null });
    log.info({ outcome: 'cancelled', recorded: written.recorded, ...lost, phase, settle }, 'capture cancelled');
    throw new UnrecoverableError('cancelled');
  }
  if (abort === 'shutdown') {
    // Not the capture's fault: hand it back to the queue for another worker, without spending an attempt.
    const written = await recordWithRetry(() => queue.attempts.release(captureId, target.id, attempt), limit, log);
    // Gone with Redis's data: its job too, so there is nothing to hand back; the record says so.
    const error = { code: 'redis_data_lost', message: 'Redis lost its data while the capture ran; the worker shut down before it finished', hint: 'request the capture again', ...(phase === null ? {} : { phase }) };
    const lost = await recordAgainIfLost(a, written.result, { status: 'failed', phase, error, timings, artifact: null });
    log.warn({ outcome: 'handed back', recorded: written.recorded, ...lost, phase }, 'worker shutting down; capture handed back to the queue');
    await a.job.moveToDelayed(Date.now(), a.token);
    throw new DelayedError();
  }
  const retry = abort === undefined && error.retriable && a.job.attemptsMade + 1 < (a.job.opts.attempts ?? 1);
  // A redacted capture's error lists the pages a selector saw without their queries, fragments or userinfo (issue 41).
  const redacted = resolveRedaction(a.record.options.redact, target.redact, a.deps.redact ?? 'none') === 'strings';
  const shown = (text: string): string => (redacted ? redactUrlsInText(text) : text);
  const info = {
    code: abort === 'lock_lost' ? ('target_lock_lost' as const) : error.code,
    message: abort === 'lock_lost' ? `lost the target lock${phase === null ? '' : ` during ${phase}`} (its lease expired); another capture may hold the target now` : shown(error.message),
    hint: error.hint === undefined ? undefined : shown(error.hint),
    ...(phase === null ? {} : { phase }),
    settle,
  };
  const failedAttempts = attemptsAfterFailure(a, info, retry);
  const written = await recordWithRetry(() => queue.attempts.fail(captureId, target.id, attempt, info, sinceFirstAttempt(a, timings), retry, failedAttempts), limit, log);
  // Gone with Redis's data: its job too, so no retry follows; written again as failed for good.
  const lost = await recordAgainIfLost(a, written.result, { status: 'failed', phase, error: { ...info, settle: info.settle }, timings, artifact: null });
  const retrying = retry && lost.recordLost !== true;
  log.warn({ outcome: 'failed', recorded: written.recorded, ...lost, code: info.code, phase, retry: retrying, attemptsMade: a.job.attemptsMade, settle }, retrying ? 'capture failed; will retry' : 'capture failed');
  if (retrying) throw new Error(`${info.code}: ${info.message}`);
  throw new UnrecoverableError(`${info.code}: ${info.message}`);
}
