/**
 * After Redis lost its data: stored captures that no record points to any
 * more (issue 25, defect 4). A capture that succeeded before the loss has its
 * snapshot and its manifest in storage, but its record went with Redis: no
 * one can find it through the API, and retention, which walks records, would
 * never delete it. The janitor's run after a loss walks the store's manifests
 * once and writes each such capture's record again from its manifest
 * (`adoptedAt` says so), as `succeeded` with its artifacts; retention then
 * keeps or deletes it by its age like any other.
 *
 * Only manifests written before the loss was noticed are adopted: a capture
 * that finished after it wrote (or re-wrote) its own record. The sweep waits
 * `graceMs` after the loss (captures that were running at the loss write their
 * records back at their lease's next renewal, 10 s) and is done once per loss.
 */
import type { Logger } from 'pino';
import { locationOfKey, parseArtifactManifest, type ArtifactManifest, type ArtifactStore } from '@heapcap/storage';
import { CaptureOptionsSchema, TriggerSchema, type CaptureRecord, type HeapcapQueue } from '@heapcap/state';

/** How long after a loss the sweep starts (captures running at the loss have restored their own records by then). */
export const ADOPT_GRACE_MS = 60_000;

export interface AdoptDeps {
  queue: HeapcapQueue;
  store: Pick<ArtifactStore, 'listManifests' | 'open'>;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  graceMs?: number;
}

export interface AdoptReport {
  /** False: no loss, the loss is younger than the grace, or its sweep was done. */
  ran: boolean;
  adopted: string[];
  /** Manifests that could not be read or parsed (left in place, named in a warning). */
  unreadable: string[];
}

/** Sweep once per loss: adopt the manifests written before it whose records are gone. */
export async function adoptAfterLoss(deps: AdoptDeps, nowMs = Date.now(), signal?: AbortSignal): Promise<AdoptReport> {
  const { queue, store, log } = deps;
  const report: AdoptReport = { ran: false, adopted: [], unreadable: [] };
  const loss = await queue.epoch.lastLoss();
  if (loss === null || loss.orphansSwept !== undefined) return report;
  const noticedMs = Date.parse(loss.at);
  if (nowMs - noticedMs < (deps.graceMs ?? ADOPT_GRACE_MS)) return report;
  report.ran = true;
  for await (const listed of store.listManifests(signal)) {
    if (listed.modified.getTime() >= noticedMs) continue;
    let captureId: string;
    try {
      captureId = locationOfKey(listed.key).captureId;
    } catch {
      continue;
    }
    if ((await queue.getCapture(captureId)) !== null) continue;
    let manifest: ArtifactManifest;
    try {
      manifest = parseArtifactManifest(JSON.parse(await readAll(await store.open(listed.key))));
      if (manifest.captureId !== captureId) throw new Error(`it names capture ${manifest.captureId}`);
    } catch (err) {
      report.unreadable.push(listed.key);
      log.warn({ key: listed.key, err: (err as Error).message }, 'a manifest without a record could not be read: left in place');
      continue;
    }
    const record = recordFromManifest(manifest, listed.key, new Date(nowMs).toISOString());
    if ((await queue.attempts.restore(record)) === 'restored') report.adopted.push(captureId);
  }
  await queue.epoch.markOrphansSwept({ at: new Date(nowMs).toISOString(), adopted: report.adopted.length });
  log.info(
    { adopted: report.adopted.length, captureIds: report.adopted.slice(0, 50), unreadable: report.unreadable.length, lossAt: loss.at },
    `${report.adopted.length} stored capture(s) whose record was lost with Redis's data written again from their manifests`,
  );
  return report;
}

/** A `succeeded` record that says what the manifest says: target, trigger, options, timings, artifact. */
export function recordFromManifest(m: ArtifactManifest, manifestKey: string, now: string): CaptureRecord {
  const sampling = m.kind === 'sampling-profile';
  const options = sampling
    ? CaptureOptionsSchema.parse({ kind: 'sampling', gzip: m.options.gzip, samplingSeconds: m.options.samplingSeconds, samplingIntervalBytes: m.options.samplingIntervalBytes })
    : CaptureOptionsSchema.parse({
        warm: m.options.warm,
        gc: m.options.gc,
        gzip: m.options.gzip,
        exposeInternals: m.options.exposeInternals ?? false,
        captureNumericValue: m.options.captureNumericValue ?? false,
        ...(m.redaction?.mode === 'strings' ? { redact: 'strings' } : {}),
      });
  // The manifest's trigger is free text; a kind the record does not know (or none) becomes the API's.
  const parsedTrigger = TriggerSchema.safeParse({ kind: m.trigger?.kind, who: m.trigger?.who, reason: m.trigger?.reason, scheduleId: m.trigger?.scheduleId });
  const trigger = parsedTrigger.success ? parsedTrigger.data : { kind: 'rest' as const, who: m.trigger?.who || 'unknown' };
  const summaryKey = !sampling && typeof m.summary?.key === 'string' ? m.summary.key : undefined;
  return {
    id: m.captureId,
    targetId: m.target.id,
    labels: m.target.labels,
    trigger,
    options,
    status: 'succeeded',
    phase: null,
    error: null,
    timings: { ...m.timings },
    artifact: {
      key: m.artifact.key,
      manifestKey,
      location: m.artifact.location,
      bytesUncompressed: m.artifact.bytesUncompressed,
      bytesStored: m.artifact.bytesStored,
      sha256: m.artifact.sha256,
      gzip: m.artifact.gzip,
      ...(sampling ? { kind: 'sampling-profile' as const } : {}),
      ...(summaryKey === undefined ? {} : { summaryKey }),
    },
    // The mode the snapshot was stored with, and its counts: the manifest's (the record's own field since issue 41).
    ...(sampling || m.redaction === undefined ? {} : { redaction: m.redaction }),
    attempts: 1,
    pinned: null,
    expired: null,
    coalesced: 0,
    adoptedAt: now,
    createdAt: new Date(m.startedAt).toISOString(),
    startedAt: new Date(m.startedAt).toISOString(),
    finishedAt: new Date(m.finishedAt).toISOString(),
    updatedAt: now,
  };
}

async function readAll(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(typeof part === 'string' ? Buffer.from(part) : part);
  return Buffer.concat(parts).toString('utf8');
}
