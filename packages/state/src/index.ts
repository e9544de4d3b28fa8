/**
 * @heapcap/state — job names and payload schemas, capture records, target
 * registry, per-target locks and the audit log, all in Redis. Shared by the api
 * (producer) and the worker (consumer). This is the stable API:
 *
 *   const q = createQueue({ redisUrl, prefix? })           // HeapcapQueue; connects lazily
 *   await q.ping(timeoutMs?)                                // throws QueueError 'redis_unavailable'
 *   await q.close()                                         // idempotent
 *
 * Captures (api side)
 *   q.requestCapture({ targetId, options?, trigger, force?, idempotencyKey? })
 *       → { record, created, coalesced, replayed }
 *     created   → new capture, BullMQ job `capture` enqueued with jobId = record.id  (HTTP 202)
 *     coalesced → joined the queued/running capture of that target, record.coalesced
 *                 was incremented (HTTP 200 `coalesced: true`); `force: true` never joins
 *     replayed  → Idempotency-Key (scoped by trigger.who, 24 h) seen before: its capture
 *     throws QueueError 'target_not_found' | 'idempotency_key_reused' | 'redis_unavailable',
 *            ZodError for bad options/trigger (the api validates first)
 *   q.getCapture(id)                          → CaptureRecord | null
 *   q.listCaptures({ targetId?, status?, triggerKind?, kind?, from?, to?, limit? (1..100, 20), cursor? })
 *       → { items (newest first), nextCursor: string | null }   throws QueueError 'invalid_cursor' | 'invalid_input'
 *   q.cancelCapture(id)                       → { outcome: 'cancelled'|'cancelling'|'finished'|'not_found', record }
 *     queued → cancelled now (job removed); running → 'cancelling', the worker aborts
 *     through its AbortSignal and the record becomes `cancelled` (use waitForCapture)
 *   q.waitForCapture(id, timeoutMs, signal?)  → record once terminal, else as it is at the deadline; null if unknown
 *   q.clearArtifact(id)                       → after deleting a finished capture's objects
 *   q.depth()                                 → { jobs: {waiting, active, delayed, …}, records: {queued, running, …} }
 *   q.counters()                              → { lock_waits }
 *   q.finishedMetrics()                       → finished captures by status/code, phase histograms, bytes
 *                                               (kept by the terminal transition itself: never misses a finish)
 *
 * Target registry (the allowlist)
 *   await loadTargetsFile(path, { missingOk? }) → Target[]   (YAML or JSON; QueueError on bad files)
 *   q.targets.syncFromFile(targets) · list() · get(id) · put(body, source?) → { entry, created } · remove(id)
 *
 * Audit log
 *   q.audit.append({ action, who, from?, targetId?, captureId?, details? }) → AuditEntry (log it too)
 *   q.audit.recent(count?)
 *
 * Worker side
 *   q.locks.acquire(targetId, token, leaseMs) · extend(…) · release(targetId, token) · holder(targetId)
 *   q.attempts.start / phase / succeed / fail / cancelled / release / abandon / cancelRequested
 *   q.events.onCancel(listener) (after `await q.events.ready()`)
 *   reconcileCaptures(q, graceMs?)
 *
 * Growth and analyses (after a capture)
 *   q.analyses.setGrowth(id, growth) · setState(id, state)   (worker; false when the record is gone)
 *   q.analyses.request(id, who) → { outcome: 'queued'|'pending'|'not_found'|'unavailable', record }
 *     queued → an `analysis` job (ANALYSIS_QUEUE, AnalysisJobSchema) was added; pending → one is queued or running
 *
 * Leak hunts
 *   q.leakHunts.create({ targetId, intervalMs, reason?, requestedBy }) → LeakHuntRecord (a `leak-hunt` job on leakHuntQueueName(target's placement); failed at once when no live worker consumes it)
 *   q.leakHunts.get(id) · list({targetId?, limit}) (newest first) · put(hunt)   (the worker writes a running hunt's progress)
 *
 * Pins, schedules and retention
 *   q.setPin(id, pin, by, reason?)             → { outcome: 'ok'|'not_found'|'expired'|'expiring', record }
 *   q.schedules.get(id) · list() · put(schedule) → { created } · remove(id) · syncScheduler(s)
 *              · schedulerNext(id) · schedulerCount() · reconcile() · ensureJanitor(everyMs) · lastRuns()
 *   checkSchedule(spec, { minIntervalMs, targets }) → { issues: [{path, message}], matches, everyMs }
 *   buildSchedule(spec, check, owner, existing)    → Schedule (defaults applied)
 *   q.planScheduleRun(scheduleId, runAt)  (the `schedule-run` job) · q.takeScheduleTurn(member) (a `member` job)
 *   new Janitor({ queue, store, log, defaults }).run() → JanitorReport   (one run at a time across processes)
 *   q.scheduleMetrics()                      → schedules by state, turns by outcome, retention counters
 *   Selectors: SelectorSchema, matchesSelector(labels, selector), selectTargets(targets, selector)
 *
 * Watch rules (watch/):
 *   q.watch.get/list/put/remove(rule) · q.watch.states(ruleId) · q.watch.setState(ruleId, state)
 *   q.watch.lease(targetIds, holder, ttlMs) → the targets this watcher samples · q.watch.release(...)
 *   q.watch.tryFire(ruleId, targetId, holder, maxPerDay, now) → fire | cap | not_holder | gone (atomic)
 *   q.watch.addSample(targetId, sample, keep, retentionMs) · q.watch.samples(targetId, since, until, limit)
 *   checkWatchRule(spec, {intervalMs, retentionMs, targets}) → issues · buildWatchRule(...) · step(rule, state, value, now)
 *
 * Record statuses: queued → running → succeeded | failed | cancelled (terminal
 * statuses are never overwritten; a retry goes running → queued), and
 * succeeded → expired when retention deleted the artifact.
 */
export * from './schemas.ts';
// Schedules, watch rules and retention are subpath exports: @heapcap/state/schedules, /watch, /retention.
export { createQueue, HeapcapQueue, type QueueOptions, type QueueDepth, type QueueCounter, type ScheduleMetrics } from './queue.ts';
export type { QueueSettings } from './context.ts';
export type { RequestCaptureInput, RequestCaptureResult } from './requests.ts';
export type { ListCapturesFilter, CapturePage } from './records.ts';
export type { CancelOutcome, CancelResult } from './cancel.ts';
export { isTerminal } from './wait.ts';
export { loadTargetsFile, TargetRegistry, type RegisteredTarget } from './registry.ts';
export { RedisEpoch, LOST_WITH_REDIS, RECREATED_AFTER_LOSS, type RedisDataLoss, type DataLossCounts } from './redis-epoch.ts';
export type { LostCapture } from './accepted-captures.ts';
export { TargetLocks } from './locks.ts';
export { AuditLog, type AuditInput, type AuditEntry } from './audit.ts';
export { closeWorker, type CloseWorkerOptions, type WorkerCloseOutcome } from './worker-close.ts';
export { CaptureAnalyses, type AnalysisRequestOutcome } from './analyses.ts';
export { LeakHunts, leakHuntQueueName, LeakHuntRecordSchema, LeakHuntJobSchema, LEAK_HUNT_QUEUE, LEAK_HUNT_JOB, LEAK_HUNT_STATUSES, type LeakHuntRecord, type LeakHuntJob } from './leak-hunts.ts';
export { HuntDriveSchema, driveUrlProblem, MAX_DRIVE_REQUESTS, MAX_DRIVE_ROUNDS, type HuntDrive } from './hunt-drive.ts';
export {
  GrowthSchema,
  GrowthClassSchema,
  AnalysisStateSchema,
  AnalysisJobSchema,
  ANALYSIS_STATUSES,
  ANALYSIS_QUEUE,
  ANALYSIS_JOB,
  type Growth,
  type AnalysisState,
  type AnalysisJob,
} from './analysis-schema.ts';
export { AttemptRecorder, type TransitionResult, type BeginResult, type CaptureErrorInfo, type CaptureArtifactInfo, type CaptureProgressInfo } from './attempts.ts';
export { CaptureEvents } from './events.ts';
export { HeadroomHistory, type HeadroomSample } from './headroom-history.ts';
export { PHASE_BUCKETS_SECONDS, type FinishedMetrics, type PhaseHistogram } from './finished-metrics.ts';
export { reconcileCaptures, type ReconcileReport } from './reconcile.ts';
export { QueueError, isQueueError, QUEUE_ERROR_CODES, type QueueErrorCode } from './errors.ts';
export { Keys } from './keys.ts';
export { SelectorSchema, matchesSelector, selectTargets, formatSelector, type Selector } from './selectors.ts';
export { HostPortSchema, WsUrlSchema } from './address.ts';
export { textSchema, isWellFormed } from './text.ts';
export { PlacementSchema, WorkerPlacementsSchema, type WorkerPlacements } from './placement.ts';
export { captureQueueName, coversPlacement, placedQueueName } from './routing.ts';
export { WorkerDirectory, WorkerInfoSchema, type WorkerInfo } from './workers.ts';
export { noWorkerError } from './no-worker.ts';
export { duplicateRedis, type RedisClient } from './connection.ts';
export { RULE_SOURCES, RULES_FILE_OWNER, type RuleSource } from './rule-source.ts';
export { RulesFileSchema, RulesFileApplier, checkRulesFile, type RulesFile, type RulesFileIssue, type RulesCheckContext, type RulesApplyReport } from './rules-file.ts';
export { effectiveProfile, ProfileSettingSchema, TargetProfileSchema, PROFILE_INTERVAL_CODE, PROFILE_UNSUPPORTED_CODE, type EffectiveProfile, type ProfileSetting } from './profile-setting.ts';
