/** Worker tuning, with the reasoning behind each default. */

export interface WorkerTuning {
  /** Captures in flight in this process (HEAPCAP_WORKER_CONCURRENCY). */
  concurrency: number;
  /**
   * BullMQ job lock. BullMQ renews it every half of this while the process is
   * alive; a worker that dies loses it after this long, and the job counts as
   * stalled. Our event loop never blocks for long (snapshot bytes stream), so
   * 30 s only has to cover GC pauses and a slow Redis.
   */
  lockDurationMs: number;
  /** How often live workers look for stalled jobs: recovery after a crash takes ≤ lockDuration + stalledInterval. */
  stalledIntervalMs: number;
  /**
   * A job whose worker died more than this many times fails (a capture that
   * kills its worker, e.g. by memory, must not kill every worker in turn).
   */
  maxStalledCount: number;
  /** Lease of the per-target lock; renewed every third of it for as long as the lock is held. */
  targetLeaseMs: number;
  /**
   * A retry first removes what the previous attempt left in storage (an open
   * multipart upload). With the store down that call hangs in the S3 client's
   * own retries (34 s with MinIO stopped): wait for it at most this long, then
   * carry on (the capture's own storage probe says whether the store is back).
   */
  previousCleanupTimeoutMs: number;
  /** When the target is locked by another capture, retry after this (plus up to 50 % jitter). */
  lockRetryMs: number;
  /**
   * After a capture stopped during generate/serialize (cancel, error) or on
   * any protocol timeout, the target may still be busy with what we asked
   * (a snapshot, a GC): keep its lock until it answers again, at most this
   * long (a 76 MB snapshot took 92 s without the warm step; 534 MB ~30 s).
   */
  settleTimeoutMs: number;
  /** The whole snapshot (generate + serialize) must finish within this. */
  snapshotTimeoutMs: number;
  /**
   * How long an attempt keeps trying to write its outcome to the record while
   * Redis does not answer (a failover, a freeze). Past it the outcome is
   * logged as unrecorded and the reconciler settles the record later.
   */
  recordRetryMs: number;
  /** SIGTERM: finish running captures for this long, then cancel them and hand them back to the queue. */
  shutdownTimeoutMs: number;
  /** Run the record/job reconciler this often (and once at start). */
  reconcileIntervalMs: number;
  /**
   * Heartbeat period; the heartbeat key lives three periods, so a dead worker
   * drops out of GET /v1/workers (and its placement's queued captures fail
   * with no_worker_for_target) within about 3× this.
   */
  heartbeatIntervalMs: number;
}

/** Defaults that suit one worker per node next to its targets. */
export const DEFAULT_TUNING: Omit<WorkerTuning, 'concurrency'> = {
  lockDurationMs: 30_000,
  stalledIntervalMs: 15_000,
  maxStalledCount: 1,
  targetLeaseMs: 30_000,
  previousCleanupTimeoutMs: 10_000,
  lockRetryMs: 1_000,
  settleTimeoutMs: 10 * 60_000,
  snapshotTimeoutMs: 30 * 60_000,
  recordRetryMs: 60_000,
  shutdownTimeoutMs: 20_000,
  reconcileIntervalMs: 60_000,
  heartbeatIntervalMs: 5_000,
};
