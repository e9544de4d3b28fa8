/**
 * The S3 artifact sink: snapshot → sha256/header → gzip → multipart upload,
 * then the manifest beside it (written last: its presence means complete).
 */
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { z } from 'zod';
import { CaptureError } from '@heapcap/errors';
import { SnapshotDigest } from '../digest.ts';
import { createSnapshotGzip } from '../gzip.ts';
import { captureObjectKeys, documentKey, locationOfKey, locationOfRef, MANIFEST_SUFFIX, manifestKey, snapshotKey, SNAPSHOT_CONTENT_TYPE, type DocumentKind } from '../keys.ts';
import { documentBody, parseDocument } from '../document.ts';
import { validManifest, type ArtifactManifest } from '../manifest.ts';
import { S3Janitor } from './cleanup.ts';
import { createS3Client } from './client.ts';
import { s3SinkConfigSchema, type S3SinkConfig, type S3SinkConfigInput } from './config.ts';
import { toStorageError, type S3ErrorContext } from './errors.ts';
import { openS3Artifact, presignS3Get } from './read.ts';
import { streamToS3 } from './upload.ts';
import type { ArtifactRef, ArtifactStore, ListedManifest, OpenOptions, PresignOptions, PutOptions, RemoveTarget, StoredArtifact, StoredObject } from '../types.ts';

/** Knobs that are not user configuration (tests shorten them). */
export interface S3SinkOptions {
  /** How often cleanup that failed (store down) is retried in the background. Default 5 s. */
  cleanupRetryEveryMs?: number;
  /** When background cleanup gives up. Default 15 min. */
  cleanupGiveUpAfterMs?: number;
}

/** Counts the bytes that pass (what is stored, after gzip). */
class ByteCounter extends Transform {
  bytes = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

// S3 user metadata travels as HTTP headers: keep it ASCII.
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

/** An ArtifactStore on S3-compatible object storage (kind 's3'). */
export class S3Sink implements ArtifactStore {
  readonly kind = 's3' as const;
  readonly canPresign = true;
  readonly root: string;
  readonly config: S3SinkConfig;
  /** Uploads, manifests, reads: retried for `retry.budgetMs`. */
  readonly #client: S3Client;
  /** Preflight and cleanup: retried for `retry.checkBudgetMs` only. */
  readonly #quickClient: S3Client;
  readonly #janitor: S3Janitor;
  #closed = false;

  constructor(config: S3SinkConfig, options: S3SinkOptions = {}) {
    this.config = config;
    this.root = `s3://${config.bucket}${config.prefix === '' ? '' : `/${config.prefix}`}`;
    this.#client = createS3Client(config, config.retry.budgetMs);
    this.#quickClient = createS3Client(config, Math.min(config.retry.checkBudgetMs, config.retry.budgetMs));
    this.#janitor = new S3Janitor(this.#quickClient, {
      retryEveryMs: options.cleanupRetryEveryMs ?? 5000,
      giveUpAfterMs: options.cleanupGiveUpAfterMs ?? 15 * 60_000,
    });
  }

  /** Writes and deletes a small probe object under the prefix, with the configured SSE and storage class. */
  async check(signal?: AbortSignal): Promise<void> {
    const key = this.#objectKey(`.heapcap-probe/${randomUUID()}`);
    const ctx = this.#ctx('check', key);
    try {
      await this.#quickClient.send(
        new PutObjectCommand({ ...this.#objectParams(key, 'text/plain'), Body: 'heapcap storage check\n' }),
        { abortSignal: signal },
      );
      await this.#quickClient.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }), {
        abortSignal: signal,
      });
    } catch (err) {
      throw toStorageError(err, ctx);
    }
  }

  /** Streams the snapshot into `<prefix>/<target>/<yyyy>/<mm>/<dd>/<capture>.heapsnapshot[.gz]`, all or nothing. */
  async put(ref: ArtifactRef, source: Readable, options: PutOptions = {}): Promise<StoredArtifact> {
    const key = snapshotKey(ref);
    const objectKey = this.#objectKey(key);
    const digest = new SnapshotDigest();
    const counter = new ByteCounter();
    // The same gzip stage as the filesystem sink (level chosen there by measurement).
    // The last stage to read the uncompressed bytes gives the producer's chunks back: gzip, or the copy into a part.
    const transforms = ref.gzip ? [digest, createSnapshotGzip(options.release), counter] : [digest, counter];
    const params = {
      ...this.#objectParams(objectKey, SNAPSHOT_CONTENT_TYPE),
      ...(ref.gzip ? { ContentEncoding: 'gzip' } : {}),
      Metadata: { 'capture-id': headerSafe(ref.captureId), 'target-id': headerSafe(ref.targetId) },
    };
    await streamToS3({
      client: this.#client,
      janitor: this.#janitor,
      params,
      source,
      transforms,
      partSize: this.config.partSizeBytes,
      queueSize: this.config.queueSize,
      signal: options.signal,
      // Gzip copies each chunk into its own output: the release happens in that stage instead.
      release: ref.gzip ? undefined : options.release,
      ctx: this.#ctx('put', objectKey),
    });
    return {
      key,
      location: this.#url(objectKey),
      bytesUncompressed: digest.bytes,
      bytesStored: counter.bytes,
      sha256: digest.sha256,
      gzip: ref.gzip,
      contentType: SNAPSHOT_CONTENT_TYPE,
      header: digest.header,
    };
  }

  /** Writes `<capture>.manifest.json` (pretty JSON) beside the snapshot; returns its key relative to the root and its URL. */
  async putManifest(ref: ArtifactRef, manifest: ArtifactManifest): Promise<StoredObject> {
    const key = manifestKey(ref);
    const objectKey = this.#objectKey(key);
    const body = validManifest(ref, manifest);
    try {
      await this.#client.send(
        new PutObjectCommand({
          ...this.#objectParams(objectKey, 'application/json'),
          Metadata: { 'capture-id': headerSafe(ref.captureId), 'target-id': headerSafe(ref.targetId) },
          Body: body,
        }),
      );
    } catch (err) {
      throw toStorageError(err, this.#ctx('manifest', objectKey));
    }
    return { key, location: this.#url(objectKey) };
  }

  /** Writes `<capture>.<kind>.json` beside the snapshot in one PutObject (visible whole or not at all); returns its key and URL. */
  async putDocument(target: RemoveTarget, kind: DocumentKind, document: unknown): Promise<StoredObject> {
    const loc = 'key' in target ? locationOfKey(target.key) : locationOfRef(target);
    const key = documentKey(loc, kind);
    const { objectKey, ctx } = this.#location('document', key);
    try {
      await this.#client.send(
        new PutObjectCommand({
          ...this.#objectParams(objectKey, 'application/json'),
          Metadata: { 'capture-id': headerSafe(loc.captureId) },
          Body: documentBody(document),
        }),
      );
    } catch (err) {
      throw toStorageError(err, ctx);
    }
    return { key, location: this.#url(objectKey) };
  }

  /** Reads `<capture>.<kind>.json` back; null when there is no such object. */
  async getDocument(key: string): Promise<unknown> {
    const { bucket, objectKey, ctx } = this.#location('read', key);
    let text: string;
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey }));
      text = (await out.Body?.transformToString('utf8')) ?? '';
    } catch (err) {
      if (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'NoSuchKey') return null;
      throw toStorageError(err, ctx);
    }
    return parseDocument(key, text);
  }

  /** Deletes the capture's manifest, summary, analysis and snapshot (gzipped or not). Missing keys are fine. */
  async remove(target: RemoveTarget): Promise<void> {
    const loc = 'key' in target ? locationOfKey(target.key) : locationOfRef(target);
    const keys = captureObjectKeys(loc).map((key) => this.#objectKey(key));
    const ctx = this.#ctx('remove', keys[0]);
    let errors: { Key?: string; Code?: string; Message?: string }[];
    try {
      const out = await this.#client.send(
        new DeleteObjectsCommand({
          Bucket: this.config.bucket,
          Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      errors = out.Errors ?? [];
    } catch (err) {
      throw toStorageError(err, ctx);
    }
    const first = errors[0];
    if (first !== undefined) {
      throw toStorageError(Object.assign(new Error(first.Message ?? 'delete failed'), { name: first.Code ?? 'Error' }), {
        ...ctx,
        key: first.Key,
      });
    }
  }

  /** Every `*.manifest.json` under the prefix (ListObjectsV2, a page of 1,000 keys per request). */
  async *listManifests(signal?: AbortSignal): AsyncIterable<ListedManifest> {
    const prefix = this.config.prefix === '' ? '' : `${this.config.prefix}/`;
    const ctx = this.#ctx('list', prefix);
    let token: string | undefined;
    do {
      signal?.throwIfAborted();
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.#client.send(new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: signal });
      } catch (err) {
        throw toStorageError(err, ctx);
      }
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !object.Key.endsWith(MANIFEST_SUFFIX)) continue;
        yield { key: object.Key.slice(prefix.length), modified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** Streams an artifact by its key relative to the root; gunzips on the fly when asked and stored gzipped. */
  async open(key: string, options: OpenOptions = {}): Promise<Readable> {
    return openS3Artifact(this.#client, this.#location('read', key), options);
  }

  /** A presigned GET URL for an artifact (default expiry 15 minutes). */
  async presign(key: string, options: PresignOptions = {}): Promise<string> {
    return presignS3Get(this.#client, this.#location('presign', key), options);
  }

  /** Retries cleanup left over from failed puts; resolves with how many tasks are still pending. */
  drainCleanups(timeoutMs: number): Promise<number> {
    return this.#janitor.drain(timeoutMs);
  }

  /** Cleanup tasks waiting for the store to come back. */
  get pendingCleanups(): number {
    return this.#janitor.pending;
  }

  /** Releases sockets and stops background cleanup (cleanups still pending are dropped). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#janitor.close();
    this.#client.destroy();
    this.#quickClient.destroy();
  }

  /** The `s3://bucket/key` URL of an object: what a person is shown. */
  #url(objectKey: string): string {
    return `s3://${this.config.bucket}/${objectKey}`;
  }

  #objectKey(relative: string): string {
    return this.config.prefix === '' ? relative : `${this.config.prefix}/${relative}`;
  }

  #objectParams(objectKey: string, contentType: string): PutObjectCommandInput & { Bucket: string; Key: string } {
    const { sse, storageClass } = this.config;
    return {
      Bucket: this.config.bucket,
      Key: objectKey,
      ContentType: contentType,
      ...(sse === undefined ? {} : { ServerSideEncryption: sse.kind }),
      ...(sse?.kind === 'aws:kms' ? { SSEKMSKeyId: sse.kmsKeyId } : {}),
      ...(storageClass === undefined ? {} : { StorageClass: storageClass }),
    };
  }

  #ctx(op: string, key?: string): S3ErrorContext {
    return { op, bucket: this.config.bucket, endpoint: this.config.endpoint, key };
  }

  #location(op: string, key: string): { bucket: string; objectKey: string; ctx: S3ErrorContext } {
    if (key === '' || key.split('/').some((part) => part === '..' || part === '.')) {
      throw new CaptureError('invalid_input', `not an artifact key: ${JSON.stringify(key)}`);
    }
    const objectKey = this.#objectKey(key.replace(/^\/+/, ''));
    return { bucket: this.config.bucket, objectKey, ctx: this.#ctx(op, objectKey) };
  }
}

/** Parses `config` (defaults applied) and returns an S3 sink; bad input throws `invalid_input` naming the fields. */
export function createS3Sink(config: S3SinkConfigInput, options: S3SinkOptions = {}): S3Sink {
  const parsed = s3SinkConfigSchema.safeParse(config);
  if (!parsed.success) {
    throw new CaptureError('invalid_input', `invalid S3 sink configuration:\n${z.prettifyError(parsed.error)}`, {
      hint: 'check HEAPCAP_STORAGE (s3://BUCKET/PREFIX) and the HEAPCAP_S3_* settings',
      cause: parsed.error,
    });
  }
  return new S3Sink(parsed.data, options);
}
