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
import type { RunSamplingInput } from './types.ts';

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

/** Sample the target's allocations for `sampling.durationMs` into the store and write the manifest; on any failure nothing is left behind. */
export async function runSamplingCapture(input: RunSamplingInput): Promise<RunSamplingOutput> {
  const { ids, store, sampling } = input;
  const { signal } = sampling;
  const ref: ArtifactRef = { captureId: ids.captureId, targetId: ids.targetId, startedAt: new Date(), gzip: input.gzip, kind: 'sampling-profile' };
  const result = await captureSamplingProfile(
    // Prove the store can take the profile before sampling starts.
    { ...sampling, beforeSampling: () => store.check(signal) },
    (profile) => store.put(ref, profile, { signal }),
  );
  const stored = result.consumed;
  const manifest: SamplingManifest = {
    schemaVersion: 1,
    kind: 'sampling-profile',
    captureId: ids.captureId,
    target: { id: ids.targetId, kind: sampling.endpoint.kind, endpoint: result.endpoint.description, labels: input.labels ?? {} },
    runtime: runtimeOf(result.facts),
    options: { gzip: input.gzip, samplingSeconds: result.durationMs / 1000, samplingIntervalBytes: result.samplingIntervalBytes, sampler: result.sampler },
    heap: result.facts.heap,
    timings: result.timings,
    profile: result.profile,
    artifact: artifactOf(stored),
    trigger: input.trigger,
    selection: result.endpoint.selected === undefined ? undefined : selectionOf(result.endpoint.selected),
    inspector: result.inspector,
    startedAt: result.startedAt.toISOString(),
    finishedAt: result.finishedAt.toISOString(),
    heapcapVersion: HEAPCAP_VERSION,
  };
  const manifestObject = await storeManifest(store, ref, manifest);
  return { kind: 'sampling-profile', manifest, manifestObject, stored, result, summary: { kind: 'off' } };
}
