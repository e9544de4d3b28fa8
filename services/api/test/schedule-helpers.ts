/** Helpers of the schedule tests: a schedule's captures, the job schedulers in Redis, quiet windows. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CaptureRecord, type HeapcapQueue } from '@heapcap/state';
import { JANITOR_SCHEDULER_ID } from '@heapcap/state/schedules';
import { waitFor } from '@heapcap/testkit';

/** Every capture schedule `id` made, oldest first. */
export async function scheduleCaptures(queue: HeapcapQueue, id: string): Promise<CaptureRecord[]> {
  const out: CaptureRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.listCaptures({ triggerKind: 'schedule', limit: 100, cursor });
    out.push(...page.items.filter((r) => r.trigger.scheduleId === id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
}

/** Ids of the schedules' job schedulers in Redis (the janitor's left out). */
export async function schedulerIds(queue: HeapcapQueue): Promise<string[]> {
  const all = await queue.schedules.bull.getJobSchedulers(0, -1, true);
  return all.map((s) => s.key).filter((k) => k !== JANITOR_SCHEDULER_ID).sort();
}

/** Resolves once none of schedule `id`'s captures is queued or running; returns them all. */
export async function settled(queue: HeapcapQueue, id: string, timeoutMs = 60_000): Promise<CaptureRecord[]> {
  return waitFor(
    async () => {
      const all = await scheduleCaptures(queue, id);
      return all.every((r) => r.status !== 'queued' && r.status !== 'running') ? all : undefined;
    },
    { timeoutMs, intervalMs: 200, what: `the captures of schedule ${id} to finish` },
  );
}

/**
 * Asserts schedule `id` makes no capture for `ms` (an absence can only be
 * observed over a window; callers make it longer than two intervals).
 */
export async function assertQuiet(queue: HeapcapQueue, id: string, ms: number, why: string): Promise<void> {
  const before = (await scheduleCaptures(queue, id)).map((r) => r.id);
  await sleep(ms);
  const after = (await scheduleCaptures(queue, id)).map((r) => r.id);
  assert.deepEqual(after, before, `${why}: schedule ${id} made captures during a ${ms} ms window`);
}

/** ms between consecutive createdAt times. */
export function gaps(records: readonly CaptureRecord[], field: 'createdAt' | 'startedAt' = 'createdAt'): number[] {
  const times = records.map((r) => Date.parse(r[field] ?? '')).sort((a, b) => a - b);
  return times.slice(1).map((t, i) => t - times[i]!);
}
