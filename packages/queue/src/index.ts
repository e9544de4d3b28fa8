/**
 * @heapcap/queue — job names and payload schemas, capture records, target
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
 *   q.listCaptures({ targetId?, status?, triggerKind?, from?, to?, limit? (1..100, 20), cursor? })
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
 * Record statuses: queued → running → succeeded | failed | cancelled (terminal
 * statuses are never overwritten; a retry goes running → queued).
 */
export * from './schemas.ts';
export { createQueue, HeapcapQueue, type QueueOptions, type QueueDepth, type QueueCounter } from './queue.ts';
export type { QueueSettings } from './context.ts';
export type { RequestCaptureInput, RequestCaptureResult } from './requests.ts';
export type { ListCapturesFilter, CapturePage } from './records.ts';
export type { CancelOutcome, CancelResult } from './cancel.ts';
export { isTerminal } from './wait.ts';
export { loadTargetsFile, TargetRegistry, type RegisteredTarget } from './registry.ts';
export { TargetLocks } from './locks.ts';
export { AuditLog, type AuditInput, type AuditEntry } from './audit.ts';
export { AttemptRecorder, type TransitionResult, type CaptureErrorInfo, type CaptureArtifactInfo } from './attempts.ts';
export { CaptureEvents } from './events.ts';
export { PHASE_BUCKETS_SECONDS, type FinishedMetrics, type PhaseHistogram } from './finished-metrics.ts';
export { reconcileCaptures, type ReconcileReport } from './reconcile.ts';
export { QueueError, isQueueError, QUEUE_ERROR_CODES, type QueueErrorCode } from './errors.ts';
export { Keys } from './keys.ts';
