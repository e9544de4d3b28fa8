/**
 * The artifact sink contract shared by the filesystem and S3 sinks.
 *
 * A sink is all-or-nothing: `put` either makes the complete snapshot object
 * visible under its final key, or leaves nothing behind (no temp file, no open
 * multipart upload). The manifest is written last; its presence means the
 * capture is complete.
 */
import type { Readable } from 'node:stream';
import type { ArtifactRef } from './artifact-ref.ts';
import type { DocumentKind } from './keys.ts';
import type { ArtifactManifest } from './manifest.ts';

export type { ArtifactKind, ArtifactRef } from './artifact-ref.ts';

/** Facts read from the snapshot's own header (`snapshot.meta`, counts). */
export interface SnapshotHeader {
  nodeCount: number;
  edgeCount: number;
  traceFunctionCount?: number;
  nodeFields: string[];
  edgeFields: string[];
}

/** Where a store wrote an object: the key to hand back to it, and the place to show a person. */
export interface StoredObject {
  /** Key relative to the store root, e.g. `checkout/2026/11/21/<id>.manifest.json`. */
  key: string;
  /** Where to find it: a file path (the store's root joined with the key) or an `s3://bucket/key` URL. */
  location: string;
}

/** What `put` wrote. `key` is e.g. `checkout/2026/11/21/<id>.heapsnapshot.gz` (`.heapprofile.gz` for a sampling profile). */
export interface StoredArtifact extends StoredObject {
  /** Bytes of snapshot JSON received from the target (uncompressed). */
  bytesUncompressed: number;
  /** Bytes stored (after gzip, if on). */
  bytesStored: number;
  /** Hex sha256 of the uncompressed snapshot JSON. */
  sha256: string;
  gzip: boolean;
  contentType: string;
  /** Parsed from the snapshot's header; null when the header could not be read (always for a sampling profile). */
  header: SnapshotHeader | null;
}

export interface PutOptions {
  signal?: AbortSignal;
  /**
   * Called with each chunk of `source` once the store's last stage that reads
   * it is done with its bytes (gzip consumed it, the file write completed, the
   * upload copied it into a part), so that the producer may refill its memory.
   * The capture engine's block pool is the producer (@heapcap/capture's
   * chunk-pool.ts; the pipeline passes its `release`); the store never keeps a
   * chunk after this call. Default: none, chunks are left to the GC.
   */
  release?: (chunk: Uint8Array) => void;
}

/** Options for reading an artifact back. */
export interface OpenOptions {
  /** Gunzip on the fly when the artifact is stored gzipped; default false: the stored bytes. */
  decompress?: boolean;
  /**
   * Only the stored bytes `start`..`end` (inclusive, offsets into the stored
   * object, as in an HTTP byte range); not with `decompress` (a gzip stream
   * cannot start in the middle).
   */
  range?: { start: number; end: number };
  signal?: AbortSignal;
}

/** Options for a presigned URL. */
export interface PresignOptions {
  /** Lifetime of the URL; default 900 (15 minutes), at most 604800 (7 days, the SigV4 limit). */
  expiresInSeconds?: number;
}

/**
 * Which capture's artifacts to delete: its ref (before `put` returned a key,
 * e.g. cleaning up an earlier attempt) or the key `put` returned (what a
 * capture record keeps). Either way every object of the capture goes.
 */
export type RemoveTarget = ArtifactRef | { key: string };

/**
 * An artifact store: filesystem or S3-compatible object storage. The only
 * place that knows the key layout; callers keep the keys it returns and hand
 * them back, never build or parse them.
 */
/** A manifest a store holds: its key (as the store's other methods take it) and when it was written. */
export interface ListedManifest {
  key: string;
  modified: Date;
}

export interface ArtifactStore {
  readonly kind: 'file' | 's3';
  /** Human-readable root, e.g. `/var/lib/heapcap` or `s3://bucket/prefix`. */
  readonly root: string;
  /** True when `presign` can hand out a URL instead of streaming the bytes. */
  readonly canPresign: boolean;
  /**
   * Prove the store can take an artifact now (writes and deletes a probe).
   * Runs before the target is paused, so a capture that cannot be stored never starts.
   */
  check(signal?: AbortSignal): Promise<void>;
  /** Stream the snapshot in, all or nothing. Rejects with a CaptureError (storage_* or cancelled). */
  put(ref: ArtifactRef, source: Readable, options?: PutOptions): Promise<StoredArtifact>;
  /** Validate and write `<captureId>.manifest.json` beside the snapshot (last: its presence means complete); returns its key and location. */
  putManifest(ref: ArtifactRef, manifest: ArtifactManifest): Promise<StoredObject>;
  /**
   * Write a derived JSON document (`<captureId>.summary.json`, `.analysis.json`)
   * beside the capture's snapshot, whole or not at all (tmp + rename, or one
   * PutObject); returns its key and location. `target` is the capture's ref,
   * or the key of any of its objects (what a record keeps).
   */
  putDocument(target: RemoveTarget, kind: DocumentKind, document: unknown): Promise<StoredObject>;
  /** A derived document by the key `putDocument` returned, parsed; null when it does not exist. */
  getDocument(key: string): Promise<unknown>;
  /** Stream a stored object (snapshot, manifest) by the key this store returned. */
  open(key: string, options?: OpenOptions): Promise<Readable>;
  /** A short-lived URL for `key`; rejects with `invalid_input` where `canPresign` is false. */
  presign(key: string, options?: PresignOptions): Promise<string>;
  /** Delete every object of one capture (snapshot, manifest, summary, leftovers). Missing objects are fine. */
  remove(target: RemoveTarget): Promise<void>;
  /**
   * Every capture manifest under the root, in no particular order, with when it
   * was written: what the janitor walks after Redis lost the records, to find the
   * stored captures no record points to any more. Lists the whole root: not a hot path.
   */
  listManifests(signal?: AbortSignal): AsyncIterable<ListedManifest>;
  /** Release sockets and background work. Idempotent. */
  close(): Promise<void>;
}
