/**
 * A profile beside every snapshot of a target whose continuous allocation profile runs (watch/profiles.ts): right
 * after the snapshot's record is written, the worker asks for a read of the running sampler (trigger
 * `besideOf`), and links the snapshot to it (`profileCaptureId`), so GET /v1/diff of two such snapshots answers
 * `allocations` too. When that read is stored and the snapshot is a scheduled one with `growth`, the grown
 * allocation sites since the previous snapshot's profile are added to its `growth`, and its suspects whose class a
 * grown site constructs get that site's `allocated` line.
 * Failures here are logged and never touch the captures' outcomes.
 */
import type { Logger } from 'pino';
import { allocatedAtLine, constructorSites, diffProfiles } from '@heapcap/analysis';
import type { CaptureRecord, HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { GROWTH_CLASSES } from './growth.ts';

/** A state the holder has not refreshed for this long belongs to no running sampler (the holder ticks every few seconds). */
const STALE_MS = 120_000;

interface Deps {
  queue: HeapcapQueue;
  sink: ArtifactStore;
  log: Logger;
}

/** After snapshot `record` succeeded: ask for the profile beside it when the target's sampler runs. */
export async function requestProfileBeside(deps: Pick<Deps, 'queue' | 'log'>, record: CaptureRecord): Promise<void> {
  const { queue, log } = deps;
  try {
    const state = await queue.watch.profileState(record.targetId);
    if (state === null || Date.now() - Date.parse(state.aliveAt) > STALE_MS) return;
    const res = await queue.requestCapture({
      targetId: record.targetId,
      options: { kind: 'sampling', readRunning: true, samplingIntervalBytes: state.samplingIntervalBytes },
      trigger: { kind: 'profile', who: 'profile:beside', reason: `allocation profile stored beside snapshot ${record.id}`, besideOf: record.id, profile: { since: state.startedAt, samplingIntervalBytes: state.samplingIntervalBytes } },
      // Its own record (not joined to a periodic read): it names the snapshot it goes with.
      force: true,
    });
    await queue.analyses.setProfileCapture(record.id, res.record.id);
    log.info({ profileCaptureId: res.record.id }, 'allocation profile beside the snapshot requested');
  } catch (err) {
    log.warn({ err }, 'could not request the allocation profile beside the snapshot; the snapshot itself is recorded');
  }
}

/** Reads a stored profile whole (V8's are small: 1-3 MB); null when it is not there. */
async function readProfile(sink: ArtifactStore, record: CaptureRecord | null): Promise<unknown> {
  if (record === null || record.status !== 'succeeded' || record.artifact?.kind !== 'sampling-profile') return null;
  const chunks: Buffer[] = [];
  for await (const chunk of await sink.open(record.artifact.key, { decompress: true })) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

/** After profile `record` (beside a snapshot) succeeded: the grown allocation sites on that snapshot's `growth`. */
export async function recordGrowthBySite(deps: Deps, record: CaptureRecord): Promise<void> {
  const { queue, sink, log } = deps;
  const snapshotId = record.trigger.besideOf;
  if (snapshotId === undefined) return;
  try {
    const snapshot = await queue.getCapture(snapshotId);
    const since = snapshot?.growth?.since;
    if (snapshot?.growth === undefined || since === undefined || since === null) return;
    const previous = await queue.getCapture(since);
    if (previous?.profileCaptureId === undefined) return;
    const baseRecord = await queue.getCapture(previous.profileCaptureId);
    // `record` is the record as the attempt began (no artifact yet): read it as it now stands.
    const [base, head] = [await readProfile(sink, baseRecord), await readProfile(sink, await queue.getCapture(record.id))];
    if (base === null || head === null) return;
    const diff = diffProfiles(base, head, { limit: GROWTH_CLASSES });
    const grown = diff.grown.map((d) => ({ functionName: d.functionName, url: d.url, line: d.line, column: d.column, baseBytes: d.baseBytes, headBytes: d.headBytes, bytesDelta: d.bytesDelta }));
    const suspects = snapshot.growth.suspects;
    const sites = constructorSites(base, head, suspects?.items.map((s) => s.class) ?? []);
    const name = <T extends { class: string; allocated?: string | undefined }>(s: T): T => {
      const allocated = s.allocated ?? allocatedAtLine(sites.get(s.class));
      return allocated === undefined ? s : { ...s, allocated };
    };
    const named = suspects === undefined ? {} : { suspects: { ...suspects, items: suspects.items.map(name) } };
    await queue.analyses.setGrowth(snapshot.id, { ...snapshot.growth, ...named, allocations: { base: previous.profileCaptureId, head: record.id, grown } });
    log.info({ snapshotId, grown: grown.map((g) => `${g.functionName} ${g.url}:${g.line} +${g.bytesDelta} B`) }, 'growth by allocation site recorded');
  } catch (err) {
    log.warn({ err, snapshotId }, 'could not compute the growth by allocation site; the captures are recorded');
  }
}
