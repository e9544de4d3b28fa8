/**
 * Heal records and jobs that disagree. Enqueueing is not atomic with creating
 * the record, and BullMQ fails a job that stalls too often without the record
 * knowing. Runs at worker start and periodically; cheap (reads the queued and
 * running indexes only).
 */
import type { Queue } from 'bullmq';
import { enqueueCapture } from './jobs.ts';
import type { HeapcapQueue } from './queue.ts';

/** What a reconcile pass did. */
export interface ReconcileReport {
  /** Queued records that had no job: enqueued. */
  enqueued: string[];
  /** Records whose job failed or vanished while they were queued/running: marked failed. */
  abandoned: string[];
}

/**
 * The ids of a queue's live jobs: every state BullMQ's getState reports as live
 * (wait and paused are 'waiting'). Read in one MULTI, so a job moving between
 * lists meanwhile is in exactly one of them. O(jobs) once per pass, where
 * asking getState per record ran LPOS over the wait list each time: O(backlog²).
 */
async function liveJobIds(bull: Queue): Promise<Set<string>> {
  const k = bull.keys;
  const replies = await bull.client.then((c) =>
    c
      .multi()
      .lrange(k.wait!, 0, -1)
      .lrange(k.paused!, 0, -1)
      .lrange(k.active!, 0, -1)
      .zrange(k.delayed!, 0, -1)
      .zrange(k.prioritized!, 0, -1)
      .zrange(k['waiting-children']!, 0, -1)
      .exec(),
  );
  const ids = new Set<string>();
  for (const [err, list] of replies ?? []) {
    if (err !== null) throw err;
    for (const id of list as string[]) ids.add(id);
  }
  return ids;
}

/** Reconcile records older than `graceMs` (younger ones may be mid-request). */
export async function reconcileCaptures(queue: HeapcapQueue, graceMs = 10_000): Promise<ReconcileReport> {
  const report: ReconcileReport = { enqueued: [], abandoned: [] };
  const cutoff = Date.now() - graceMs;
  // Per placement queue, read once per pass and only if a record of that placement needs it.
  const live = new Map<string, Promise<Set<string>>>();
  const liveIn = (placement: string | null): Promise<Set<string>> => {
    const key = placement ?? '';
    let ids = live.get(key);
    if (ids === undefined) live.set(key, (ids = liveJobIds(queue.queueFor(placement))));
    return ids;
  };
  for (const status of ['queued', 'running'] as const) {
    const ids = await queue.redis.zrange(queue.keys.indexStatus(status), '-inf', cutoff, 'BYSCORE');
    for (const id of ids) {
      const record = await queue.getCapture(id);
      if (record === null || record.status !== status) continue;
      const placement = await queue.redis.hget(queue.keys.record(id), 'placement');
      // The common case, a job waiting or running: nothing to heal. The snapshot may be older than
      // the record's status; anything not in it is asked about one by one, as before.
      if ((await liveIn(placement)).has(id)) continue;
      const job = await queue.queueFor(placement).getJob(id);
      const state = job === undefined ? 'missing' : await job.getState();
      if (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'prioritized' || state === 'waiting-children') continue;
      // Running with its job gone, but its worker still holds the target lock for it (lock tokens start with the
      // capture id): Redis lost its data and the worker took the lock again and wrote the record back while the
      // capture goes on (services/worker/src/lease.ts). Its outcome will finish the record; a dead worker's lock
      // expires with its lease, and the next pass settles the record then.
      if (state === 'missing' && status === 'running' && ((await queue.locks.holder(record.targetId)) ?? '').startsWith(`${id}:`)) continue;
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
