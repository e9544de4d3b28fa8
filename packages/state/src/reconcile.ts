/**
 * Heal records and jobs that disagree. Enqueueing is not atomic with creating
 * the record, and BullMQ fails a job that stalls too often without the record
 * knowing. Runs at worker start and periodically; cheap (reads the queued and
 * running indexes only).
 */
import { enqueueCapture } from './jobs.ts';
import type { HeapcapQueue } from './queue.ts';

/** What a reconcile pass did. */
export interface ReconcileReport {
  /** Queued records that had no job: enqueued. */
  enqueued: string[];
  /** Records whose job failed or vanished while they were queued/running: marked failed. */
  abandoned: string[];
}

/** Reconcile records older than `graceMs` (younger ones may be mid-request). */
export async function reconcileCaptures(queue: HeapcapQueue, graceMs = 10_000): Promise<ReconcileReport> {
  const report: ReconcileReport = { enqueued: [], abandoned: [] };
  const cutoff = Date.now() - graceMs;
  for (const status of ['queued', 'running'] as const) {
    const ids = await queue.redis.zrange(queue.keys.indexStatus(status), '-inf', cutoff, 'BYSCORE');
    for (const id of ids) {
      const record = await queue.getCapture(id);
      if (record === null || record.status !== status) continue;
      const placement = await queue.redis.hget(queue.keys.record(id), 'placement');
      const job = await queue.queueFor(placement).getJob(id);
      const state = job === undefined ? 'missing' : await job.getState();
      if (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'prioritized' || state === 'waiting-children') continue;
      if (state === 'missing' && status === 'queued') {
        await enqueueCapture({ queueFor: (p) => queue.queueFor(p), settings: queue.settings }, id, record.targetId, placement);
        report.enqueued.push(id);
        continue;
      }
      // failed (e.g. stalled more than maxStalledCount), completed without a terminal record, or gone while running.
      const reason = job?.failedReason ?? `job state ${state}`;
      const res = await queue.attempts.abandon(id, record.targetId, {
        code: 'internal',
        message: `the capture's job ended without finishing the record (${reason})`,
        ...(record.phase === null ? {} : { phase: record.phase }),
      });
      if (res.ok) report.abandoned.push(id);
    }
  }
  return report;
}
