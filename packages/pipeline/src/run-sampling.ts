/**
 * The sampling-profile capture job: the engine's profile into the store, then
 * its manifest (last: its presence means the capture is complete). No
 * summary: the per-class summary and the analyses read heap snapshots only.
 */
import { captureSamplingProfile, type SamplingResult } from '@heapcap/capture';
import type { ArtifactRef, SamplingManifest, StoredArtifact, StoredObject } from '@heapcap/storage';
import { HEAPCAP_VERSION } from '@heapcap/config';
import { artifactOf, runtimeOf, selectionOf } from './manifest.ts';
import { storeManifest } from './store-manifest.ts';
import type { RunCaptureInput } from './types.ts';

/** What a sampling capture produced. */
export interface RunSamplingOutput {
  kind: 'sampling-profile';
  manifest: SamplingManifest;
  /** Where the manifest was written (its key and the place to show a person). */
  manifestObject: StoredObject;
  stored: StoredArtifact;
  result: SamplingResult<StoredArtifact>;
  /** Sampling profiles have no summary. */
  summary: { kind: 'off' };
}

/** How long to sample when the caller does not say (the API's default too). */
const DEFAULT_SECONDS = 30;

/** Sample the target's allocations for `samplingSeconds` into the sink and write the manifest; on any failure nothing is left behind. */
export async function runSamplingCapture(input: RunCaptureInput): Promise<RunSamplingOutput> {
  const ref: ArtifactRef = { captureId: input.captureId, targetId: input.targetId, startedAt: new Date(), gzip: input.gzip, kind: 'sampling-profile' };
  const seconds = input.samplingSeconds ?? DEFAULT_SECONDS;
  const { signal } = input;
  const result = await captureSamplingProfile(
    {
      endpoint: input.endpoint,
      durationMs: seconds * 1000,
      ...(input.samplingIntervalBytes === undefined ? {} : { samplingIntervalBytes: input.samplingIntervalBytes }),
      ...(signal === undefined ? {} : { signal }),
      ...(input.onProgress === undefined ? {} : { onProgress: input.onProgress }),
      // Prove the store can take the profile before sampling starts.
      beforeSampling: () => input.sink.check(signal),
    },
    (profile) => input.sink.put(ref, profile, signal === undefined ? {} : { signal }),
  );
  const stored = result.consumed;
  const manifest: SamplingManifest = {
    schemaVersion: 1,
    kind: 'sampling-profile',
    captureId: input.captureId,
    target: { id: input.targetId, kind: input.endpoint.kind, endpoint: result.endpoint.description, labels: input.labels ?? {} },
    runtime: runtimeOf(result.facts),
    options: { gzip: input.gzip, samplingSeconds: seconds, samplingIntervalBytes: result.samplingIntervalBytes },
    heap: result.facts.heap,
    timings: result.timings,
    profile: result.profile,
    artifact: artifactOf(stored),
    ...(input.trigger === undefined ? {} : { trigger: input.trigger }),
    ...(result.endpoint.selected === undefined ? {} : { selection: selectionOf(result.endpoint.selected) }),
    inspector: result.inspector,
    startedAt: result.startedAt.toISOString(),
    finishedAt: result.finishedAt.toISOString(),
    heapcapVersion: HEAPCAP_VERSION,
  };
  const manifestObject = await storeManifest(input.sink, ref, manifest);
  return { kind: 'sampling-profile', manifest, manifestObject, stored, result, summary: { kind: 'off' } };
}
