/** The last step of every capture kind: the manifest, whose presence means the capture is complete. */
import { CaptureError, toCaptureError } from '@heapcap/errors';
import type { ArtifactManifest, ArtifactRef, ArtifactStore, StoredObject } from '@heapcap/storage';

/** Write the manifest; when that fails remove the artifact too (without its manifest the capture is not complete). */
export async function storeManifest(sink: ArtifactStore, ref: ArtifactRef, manifest: ArtifactManifest): Promise<StoredObject> {
  try {
    return await sink.putManifest(ref, manifest);
  } catch (err) {
    await sink.remove(ref).catch(() => undefined);
    const error = toCaptureError(err, 'storage_failed');
    error.phase ??= 'sink';
    throw error instanceof CaptureError ? error : new CaptureError('storage_failed', String(err));
  }
}
