/**
 * `@heapcap/storage/file`: the filesystem store without the S3 client. The AWS
 * SDK adds ~30 MB of RSS when loaded; a capture into a directory, on a host
 * that may be short of memory, should not pay for it.
 */
export type { ArtifactKind, ArtifactRef, ArtifactStore, PutOptions, SnapshotHeader, StoredArtifact, StoredObject } from './types.ts';
export type { ArtifactManifest, CaptureManifest, SamplingManifest } from './manifest.ts';
export { createFileSink } from './fs/sink.ts';
export { downloadFileName } from './keys.ts';
