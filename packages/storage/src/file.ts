/**
 * `@heapcap/storage/file`: the filesystem sink and key helpers without the S3
 * client. The AWS SDK adds ~30 MB of RSS when loaded; a capture into a
 * directory, on a host that may be short of memory, should not pay for it.
 */
export type { ArtifactRef, ArtifactSink, PutOptions, SnapshotHeader, StoredArtifact } from './types.ts';
export { newCaptureId } from './keys.ts';
export { createFileSink } from './fs-sink.ts';
