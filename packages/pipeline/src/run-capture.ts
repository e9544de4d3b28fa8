/**
 * The capture job, end to end: the engine streams into a store, then the
 * manifest is written (last: its presence means the capture is complete).
 * Shared by the CLI and the worker; knows nothing of queues or records.
 */
import type { Readable } from 'node:stream';
import { captureHeapSnapshot, type CaptureOptions, type CaptureProgress, type CaptureResult, type EndpointSpec, type SnapshotTransport, type WarmMode } from '@heapcap/capture';
import { CaptureError, toCaptureError } from '@heapcap/errors';
import type { ArtifactRef, ArtifactStore, CaptureManifest, StoredArtifact } from '@heapcap/storage';
import { buildManifest, type CaptureManifestInput } from './manifest.ts';

export interface RunCaptureInput {
  captureId: string;
  targetId: string;
  endpoint: EndpointSpec;
  labels?: Record<string, string>;
  sink: ArtifactStore;
  gzip: boolean;
  warm: WarmMode;
  gc: boolean;
  exposeInternals?: boolean;
  captureNumericValue?: boolean;
  memoryCeilingBytes?: number;
  spillDir?: string | undefined;
  snapshotTimeoutMs?: number | undefined;
  /** How the snapshot bytes travel (default cdp); see @heapcap/capture's pipe transport. */
  transport?: SnapshotTransport | undefined;
  pipeDir?: string | undefined;
  /** Capture even when the headroom gate refuses. */
  force?: boolean;
  /** The target's configured memory limit. */
  memoryLimitBytes?: number | undefined;
  /** What the target's last measured capture cost (heap used, extra RSS): the gate scales it to today's heap. */
  headroomPrevious?: { heapUsedBytes: number; extraBytes: number } | undefined;
  trigger?: CaptureManifestInput['trigger'];
  signal?: AbortSignal;
  onProgress?: (p: CaptureProgress) => void;
}

export interface RunCaptureOutput {
  manifest: CaptureManifest;
  manifestKey: string;
  stored: StoredArtifact;
  result: CaptureResult<StoredArtifact>;
}

/** Capture into the sink and write the manifest; on any failure nothing is left behind. */
export async function runCapture(input: RunCaptureInput): Promise<RunCaptureOutput> {
  const startedAt = new Date();
  const ref: ArtifactRef = { captureId: input.captureId, targetId: input.targetId, startedAt, gzip: input.gzip };
  const options: CaptureOptions = {
    endpoint: input.endpoint,
    warm: input.warm,
    gc: input.gc,
    exposeInternals: input.exposeInternals === true,
    captureNumericValue: input.captureNumericValue === true,
    ...(input.memoryCeilingBytes === undefined ? {} : { memoryCeilingBytes: input.memoryCeilingBytes }),
    ...(input.spillDir === undefined ? {} : { spillDir: input.spillDir }),
    ...(input.transport === undefined ? {} : { transport: input.transport }),
    ...(input.pipeDir === undefined ? {} : { pipeDir: input.pipeDir }),
    ...(input.snapshotTimeoutMs === undefined ? {} : { timeouts: { snapshotMs: input.snapshotTimeoutMs } }),
    force: input.force === true,
    ...(input.memoryLimitBytes === undefined ? {} : { memoryLimitBytes: input.memoryLimitBytes }),
    ...(input.headroomPrevious === undefined ? {} : { headroom: { previous: input.headroomPrevious } }),
    ...(input.signal === undefined ? {} : { signal: input.signal }),
    ...(input.onProgress === undefined ? {} : { onProgress: input.onProgress }),
    // Prove the store can take the artifact before the target is paused for it.
    beforeSnapshot: () => input.sink.check(input.signal),
  };
  const result = await captureHeapSnapshot(options, (snapshot: Readable) =>
    input.sink.put(ref, snapshot, input.signal === undefined ? {} : { signal: input.signal }),
  );
  const stored = result.consumed;
  const manifest = buildManifest({
    captureId: input.captureId,
    target: { id: input.targetId, kind: input.endpoint.kind, endpoint: result.endpoint.description, labels: input.labels ?? {} },
    result,
    stored,
    gzip: input.gzip,
    warmMode: input.warm,
    ...(input.trigger === undefined ? {} : { trigger: input.trigger }),
  });
  try {
    const manifestKey = await input.sink.putManifest(ref, manifest);
    return { manifest, manifestKey, stored, result };
  } catch (err) {
    // Without its manifest the capture is not complete: remove the snapshot too.
    await input.sink.remove(ref).catch(() => undefined);
    const error = toCaptureError(err, 'storage_failed');
    error.phase ??= 'sink';
    throw error instanceof CaptureError ? error : new CaptureError('storage_failed', String(err));
  }
}
