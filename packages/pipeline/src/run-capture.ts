/**
 * The capture job, end to end: the engine streams into a store while a
 * summary tee reads the same bytes, then the summary is written, then the
 * manifest (last: its presence means the capture is complete).
 * Shared by the CLI and the worker; knows nothing of queues or records.
 */
import { pipeline, type Readable } from 'node:stream';
import { createRedactor, SummaryTee } from '@heapcap/analysis';
import { captureHeapSnapshot, type CaptureResult } from '@heapcap/capture';
import { toCaptureError } from '@heapcap/errors';
import type { ArtifactRef, ArtifactStore, CaptureManifest, StoredArtifact, StoredObject } from '@heapcap/storage';
import { buildManifest, type CaptureSummaryOutcome } from './manifest.ts';
import { storeManifest } from './store-manifest.ts';
import { runSamplingCapture, type RunSamplingOutput } from './run-sampling.ts';
import type { RunCaptureInput, RunSamplingInput, RunSnapshotInput } from './types.ts';

export interface RunCaptureOutput {
  kind: 'snapshot';
  manifest: CaptureManifest;
  /** Where the manifest was written (its key and the place to show a person). */
  manifestObject: StoredObject;
  stored: StoredArtifact;
  result: CaptureResult<StoredArtifact>;
  /** The summary written beside the artifact, or why there is none (never a reason to fail the capture). */
  summary: CaptureSummaryOutcome;
}

/**
 * Capture into the store and write the manifest; on any failure nothing is
 * left behind. `kind: 'sampling'` takes an allocation sampling profile instead
 * of a snapshot.
 */
export function runCapture(input: RunSnapshotInput): Promise<RunCaptureOutput>;
export function runCapture(input: RunSamplingInput): Promise<RunSamplingOutput>;
export function runCapture(input: RunCaptureInput): Promise<RunCaptureOutput | RunSamplingOutput>;
export async function runCapture(input: RunCaptureInput): Promise<RunCaptureOutput | RunSamplingOutput> {
  return input.kind === 'sampling' ? runSamplingCapture(input) : runSnapshotCapture(input);
}

async function runSnapshotCapture(input: RunSnapshotInput): Promise<RunCaptureOutput> {
  const { ids, store, capture } = input;
  const { signal } = capture;
  const ref: ArtifactRef = { captureId: ids.captureId, targetId: ids.targetId, startedAt: new Date(), gzip: input.gzip };
  const tee = input.summary === false ? undefined : new SummaryTee(input.summary ?? {});
  // Redaction runs in the engine, on each chunk as it arrives: before the spill buffer (and its file),
  // the summary tee and the store, so the stored bytes and their sha256 are the redacted ones.
  const redactor = createRedactor(input.redact ?? 'none');
  const result = await captureHeapSnapshot(
    // Prove the store can take the artifact before the target is paused for it.
    { ...capture, transform: redactor, beforeSnapshot: () => store.check(signal) },
    // `release`: the store's last stage gives each of the engine's blocks back once done with it (the
    // summary tee passes the same chunks through, so the store's stages see the engine's blocks).
    (snapshot: Readable, _facts, release) => store.put(ref, tee === undefined ? snapshot : through(snapshot, tee), { release, signal }),
  );
  const stored = result.consumed;
  const summary = tee === undefined ? ({ kind: 'off' } as const) : await storeSummary(store, ref, tee);
  const manifest = buildManifest({
    captureId: ids.captureId,
    target: { id: ids.targetId, kind: capture.endpoint.kind, endpoint: result.endpoint.description, labels: input.labels ?? {} },
    result,
    stored,
    gzip: input.gzip,
    warmMode: result.warm.mode,
    trigger: input.trigger,
    summary,
    redaction: redactor?.redaction,
  });
  const manifestObject = await storeManifest(store, ref, manifest);
  return { kind: 'snapshot', manifest, manifestObject, stored, result, summary };
}

/**
 * `snapshot` through `tee`, as one Readable for the sink. The tee sits behind
 * the engine's spill buffer (it reads what the sink reads), so a slow summary
 * never stalls the target's socket. An error of the snapshot destroys the tee
 * with that same error, so the sink sees the engine's code (target_closed, …).
 */
function through(snapshot: Readable, tee: SummaryTee): Readable {
  return pipeline(snapshot, tee, () => {});
}

/** Writes the tee's summary beside the artifact; a summary that failed or cannot be stored is reported, never thrown. */
async function storeSummary(sink: ArtifactStore, ref: ArtifactRef, tee: SummaryTee): Promise<CaptureSummaryOutcome> {
  const outcome = tee.outcome;
  if (!outcome.ok) return { kind: 'failed', code: outcome.error.code, message: outcome.error.message };
  try {
    const { key, location } = await sink.putDocument(ref, 'summary', outcome.summary);
    return { kind: 'stored', key, location, summary: outcome.summary };
  } catch (err) {
    const error = toCaptureError(err, 'storage_failed');
    return { kind: 'failed', code: error.code, message: error.message };
  }
}
