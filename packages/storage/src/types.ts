/**
 * The artifact sink contract shared by the filesystem and S3 sinks.
 *
 * A sink is all-or-nothing: `put` either makes the complete snapshot object
 * visible under its final key, or leaves nothing behind (no temp file, no open
 * multipart upload). The manifest is written last; its presence means the
 * capture is complete.
 */
import type { Readable } from 'node:stream';

/** Identifies one capture's artifacts. */
export interface ArtifactRef {
  captureId: string;
  targetId: string;
  /** When the capture started; decides the yyyy/mm/dd part of the key (UTC). */
  startedAt: Date;
  /** gzip the snapshot (default true). */
  gzip: boolean;
}

/** Facts read from the snapshot's own header (`snapshot.meta`, counts). */
export interface SnapshotHeader {
  nodeCount: number;
  edgeCount: number;
  traceFunctionCount?: number;
  nodeFields: string[];
  edgeFields: string[];
}

/** What `put` wrote. */
export interface StoredArtifact {
  /** Key relative to the sink root, e.g. `checkout/2026/11/21/<id>.heapsnapshot.gz`. */
  key: string;
  /** Where to find it: an absolute path or an `s3://bucket/key` URL. */
  location: string;
  /** Bytes of snapshot JSON received from the target (uncompressed). */
  bytesUncompressed: number;
  /** Bytes stored (after gzip, if on). */
  bytesStored: number;
  /** Hex sha256 of the uncompressed snapshot JSON. */
  sha256: string;
  gzip: boolean;
  contentType: string;
  /** Parsed from the snapshot's header; null when the header could not be read. */
  header: SnapshotHeader | null;
}

export interface PutOptions {
  signal?: AbortSignal;
}

/** An artifact store: filesystem or S3-compatible object storage. */
export interface ArtifactSink {
  readonly kind: 'file' | 's3';
  /** Human-readable root, e.g. `/var/lib/heapcap` or `s3://bucket/prefix`. */
  readonly root: string;
  /**
   * Prove the sink can store an artifact now (writes and deletes a probe).
   * Runs before the target is paused, so a capture that cannot be stored never starts.
   */
  check(signal?: AbortSignal): Promise<void>;
  /** Stream the snapshot in, all or nothing. Rejects with a CaptureError (storage_* or cancelled). */
  put(ref: ArtifactRef, source: Readable, options?: PutOptions): Promise<StoredArtifact>;
  /** Write `<captureId>.manifest.json` beside the snapshot; returns its key. */
  putManifest(ref: ArtifactRef, manifest: unknown): Promise<string>;
  /** Remove the snapshot and its manifest (used when a later step fails, and for deletes). */
  remove(ref: ArtifactRef): Promise<void>;
}
