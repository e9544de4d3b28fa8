/** Retention test helpers: succeeded captures with real stored artifacts, without running a capture. */
import { Readable } from 'node:stream';
import { sampleManifest, type TestWorld } from '@heapcap/testkit';
import type { CaptureRecord, Trigger } from '../src/index.ts';
import type { Schedule } from '../src/schedules/index.ts';

/** A minimal snapshot body: the store hashes and gzips whatever it is given. */
const BODY = '{"snapshot":{"meta":{},"node_count":0,"edge_count":0},"nodes":[],"edges":[],"strings":[]}';

/** A succeeded capture of `targetId` whose snapshot and manifest are in the world's store. */
export async function storedCapture(world: TestWorld, targetId: string, trigger: Trigger): Promise<CaptureRecord> {
  const q = world.queue;
  const { record } = await q.requestCapture({ targetId, trigger, force: true });
  const started = await q.attempts.start(record.id, targetId);
  if (!started.ok) throw new Error(`could not start ${record.id}: ${started.reason}`);
  const ref = { captureId: record.id, targetId, startedAt: new Date(), gzip: true };
  const stored = await world.store.put(ref, Readable.from([Buffer.from(BODY)]));
  const { key: manifestKey } = await world.store.putManifest(ref, sampleManifest(ref, stored));
  const { key, location, bytesUncompressed, bytesStored, sha256, gzip } = stored;
  const done = await q.attempts.succeed(record.id, targetId, started.attempts, { total: 1 }, { key, manifestKey, location, bytesUncompressed, bytesStored, sha256, gzip });
  if (!done.ok) throw new Error(`could not finish ${record.id}: ${done.reason}`);
  return (await q.getCapture(record.id))!;
}

/** A failed capture of `targetId` (no artifact). */
export async function failedCapture(world: TestWorld, targetId: string, trigger: Trigger): Promise<CaptureRecord> {
  const q = world.queue;
  const { record } = await q.requestCapture({ targetId, trigger, force: true });
  const started = await q.attempts.start(record.id, targetId);
  if (!started.ok) throw new Error(`could not start ${record.id}`);
  await q.attempts.fail(record.id, targetId, started.attempts, { code: 'target_unreachable', message: 'gone' }, null, false);
  return (await q.getCapture(record.id))!;
}

/** A schedule definition (paused: no scheduler, no runs) for retention tests. */
export function pausedSchedule(id: string, retention: Schedule['retention']): Schedule {
  const now = new Date().toISOString();
  return { id, target: 'app', every: '1h', everyMs: 3_600_000, options: { warm: 'auto', gc: false, gzip: true, exposeInternals: false, captureNumericValue: false, forceHeadroom: false, kind: 'snapshot', samplingSeconds: 30, samplingIntervalBytes: 32_768 }, retention, maxConcurrent: 1, enabled: false, owner: 'runbook', createdAt: now, updatedAt: now };
}

/** The trigger of a schedule's capture. */
export const scheduleTrigger = (scheduleId: string): Trigger => ({ kind: 'schedule', who: 'runbook', scheduleId });

/** Files of capture `id` in the world's store. */
export async function filesOf(world: TestWorld, id: string): Promise<string[]> {
  return (await world.storedFiles()).filter((f) => f.includes(id)).map((f) => f.slice(f.lastIndexOf('/') + 1));
}

/** Day in ms. */
export const DAY = 86_400_000;
