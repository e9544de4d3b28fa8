/** @heapcap/storage — artifact sinks (filesystem, S3) with gzip, checksums and manifests. */
import type { StorageConfig } from '@heapcap/config';
import type { ArtifactSink } from './types.ts';
import { createFileSink } from './fs-sink.ts';
import { createS3Sink } from './s3-sink.ts';

export type { ArtifactRef, ArtifactSink, PutOptions, SnapshotHeader, StoredArtifact } from './types.ts';
export { artifactDir, snapshotKey, manifestKey, newCaptureId, SAFE_SEGMENT, SNAPSHOT_CONTENT_TYPE } from './keys.ts';
export { SnapshotDigest, parseSnapshotHeader } from './digest.ts';
export { createFileSink } from './fs-sink.ts';
export { createS3Sink } from './s3-sink.ts';
export { FileSink } from './fs-sink.ts';
export { S3Sink } from './s3-sink.ts';

/** The sink selected by configuration. */
export function createSink(config: StorageConfig): ArtifactSink {
  return config.kind === 'file' ? createFileSink({ dir: config.dir }) : createS3Sink(config);
}
