/** @heapcap/storage — artifact stores (filesystem, S3) with gzip, checksums and manifests. */
import type { StorageConfig } from '@heapcap/config';
import type { ArtifactStore } from './types.ts';
import { createFileSink } from './fs/sink.ts';
import { createS3Sink } from './s3/sink.ts';

export type { ArtifactKind, ArtifactRef, ArtifactStore, ListedManifest, OpenOptions, PresignOptions, PutOptions, RemoveTarget, SnapshotHeader, StoredArtifact, StoredObject } from './types.ts';
export { SNAPSHOT_CONTENT_TYPE, DOCUMENT_KINDS, downloadFileName, locationOfKey, siblingOf, type DocumentKind } from './keys.ts';
export { CaptureManifestSchema, SamplingManifestSchema, parseArtifactManifest, type ArtifactManifest, type CaptureManifest, type SamplingManifest } from './manifest.ts';
export { SnapshotDigest, parseSnapshotHeader } from './digest.ts';
export { createFileSink, type FileSinkOptions } from './fs/sink.ts';
export { createS3Sink, type S3SinkOptions } from './s3/sink.ts';
export { rememberCheck, REMEMBER_CHECK_MS } from './remember-check.ts';
export type { S3SinkConfig, S3SinkConfigInput } from './s3/config.ts';

/** The store selected by configuration. */
export function createStore(config: StorageConfig): ArtifactStore {
  return config.kind === 'file' ? createFileSink({ dir: config.dir }) : createS3Sink(config);
}
export { createSnapshotGzip, SNAPSHOT_GZIP_LEVEL, SNAPSHOT_GZIP_WINDOW_BITS } from './gzip.ts';
