/** The last step of every capture kind: the manifest, whose presence means the capture is complete. */
import { CaptureError, toCaptureError } from '@heapcap/errors';
import type { ArtifactManifest, ArtifactRef, ArtifactStore, StoredObject } from '@heapcap/storage';

/**
 * Write the manifest; when that fails remove the artifact too (without its manifest the capture is not complete).
 * `phase`: the one a failure is recorded in, the phase the caller's record shows while the manifest is written
 * (a snapshot's `summary`; a sampling profile has none after `sink`).
 */
export async function storeManifest(sink: ArtifactStore, ref: ArtifactRef, manifest: ArtifactManifest, phase: 'sink' | 'summary' = 'sink'): Promise<StoredObject> {
  try {
    return await sink.putManifest(ref, manifest);
  } catch (err) {
    await sink.remove(ref).catch(() => undefined);
    const error = toCaptureError(err, 'storage_failed');
    error.phase ??= phase;
    throw error instanceof CaptureError ? error : new CaptureError('storage_failed', String(err));
  }
}
