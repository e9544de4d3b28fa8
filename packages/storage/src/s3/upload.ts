/**
 * Streams a source through transforms into one S3 object with lib-storage's
 * multipart `Upload`, all or nothing.
 *
 * Memory bound: `Upload` slices the body into `partSize` Buffers. Each of
 * its `queueSize` uploaders holds one part (in flight, or its last one while it
 * waits for the next); its chunker holds the chunks of the part being
 * assembled and, for a moment, their concatenation. While all uploaders are
 * busy it stops reading, so backpressure reaches the source (the engine's
 * spill-to-disk buffer absorbs it). So at most (queueSize + 2) × partSize of
 * snapshot bytes are live: 48 MiB with the defaults (4 × 8 MiB), plus three
 * 16 KiB stream buffers and gzip's state. Measured (s3-memory.test.ts, 160 MiB
 * through 4 × 5 MiB, full GC + synchronous ArrayBuffer sweep per sample): 20.3
 * MiB live. Dead parts wait for V8's GC and its background sweeper, so the
 * process's `arrayBuffers` reading peaked at 48–78 MiB in the same run without
 * forced GC: budget RSS for ~2.5× the live bound.
 * A retried part is re-sent from its Buffer; retries cost no memory.
 *
 * Failure handling, beyond lib-storage's own `leavePartsOnError: false`:
 * - lib-storage keeps feeding the other uploaders after one part failed, and
 *   does not pass its abort signal to in-flight requests. The client is wrapped
 *   so that the first failed request (already retried by the SDK until the
 *   budget) aborts the others and the upload at once.
 * - the upload id is recorded from CreateMultipartUpload (which is never
 *   aborted mid-flight, so its id is never lost), and after every in-flight
 *   request has settled it is aborted explicitly (S3Janitor: retried in the
 *   background if the store is down right now).
 * - a PutObject / CompleteMultipartUpload that was cut off may still have
 *   completed on the server, so the key is deleted too.
 */
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { CaptureError, toCaptureError } from '@heapcap/errors';
import type { S3Janitor } from './cleanup.ts';
import { toStorageError, type S3ErrorContext } from './errors.ts';

/** One object to stream into S3. */
export interface StreamJob {
  client: S3Client;
  janitor: S3Janitor;
  /** PutObject parameters without Body (Bucket, Key, ContentType, Metadata, SSE, …). */
  params: Omit<PutObjectCommandInput, 'Body'> & { Bucket: string; Key: string };
  source: Readable;
  /** Stages between source and upload (digest, gzip, byte counter). */
  transforms: Transform[];
  partSize: number;
  queueSize: number;
  signal: AbortSignal | undefined;
  ctx: S3ErrorContext;
}

type Send = (command: unknown, options?: Record<string, unknown>) => Promise<unknown>;

/**
 * Uploads `source` → transforms → S3; resolves when the object is complete.
 * Rejects with a CaptureError: the source's own CaptureError if the source
 * failed, `cancelled` if `signal` fired, else a storage code. On rejection the
 * source has been destroyed and nothing is left in the bucket (or its cleanup is
 * queued on the janitor because the store is unreachable).
 */
export async function streamToS3(job: StreamJob): Promise<void> {
  const { source, signal, ctx } = job;
  // Aborts every request of this upload except CreateMultipartUpload.
  const internal = new AbortController();
  const inflight = new Set<Promise<unknown>>();
  let uploadId: string | undefined;
  let objectMayExist = false;
  let storageFailure: unknown;
  let sourceError: unknown;
  let tearingDown = false;
  let upload: Upload | undefined;

  const stop = (): void => {
    if (!internal.signal.aborted) internal.abort();
    void upload?.abort();
  };
  const onSourceError = (err: unknown): void => {
    // Errors we inject while tearing down come back from the source; they are not its own.
    if (!tearingDown) sourceError ??= err;
  };
  source.on('error', onSourceError);

  // A Proxy instead of a second S3Client: same connection pool and config; only
  // `send` is observed (lib-storage reads `config` and calls `send`, nothing else).
  const realSend = job.client.send.bind(job.client) as unknown as Send;
  const tracked = new Proxy(job.client, {
    get(target, prop) {
      if (prop !== 'send') return Reflect.get(target, prop, target) as unknown;
      const send: Send = (command, options) => {
        const isCreate = command instanceof CreateMultipartUploadCommand;
        if (command instanceof PutObjectCommand || command instanceof CompleteMultipartUploadCommand) objectMayExist = true;
        const sent = realSend(command, isCreate ? options : { ...options, abortSignal: internal.signal });
        inflight.add(sent);
        sent.then(
          (out) => {
            if (isCreate) uploadId = (out as { UploadId?: string }).UploadId;
          },
          (err: unknown) => {
            if (internal.signal.aborted) return;
            // The SDK already retried this request until the budget: the store is failing.
            storageFailure ??= err;
            stop();
          },
        ).finally(() => inflight.delete(sent));
        return sent;
      };
      return send;
    },
  });

  let pipelineError: unknown;
  const body = pipeline([source, ...job.transforms], (err) => {
    pipelineError = err ?? undefined;
  }) as unknown as Readable;

  const onAbort = (): void => stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal?.aborted) throw signal.reason;
    upload = new Upload({
      client: tracked,
      params: { ...job.params, Body: body },
      partSize: job.partSize,
      queueSize: job.queueSize,
      leavePartsOnError: false,
    });
    await upload.done();
    // Upload read the body to its end, so the pipeline has finished.
    if (pipelineError !== undefined) throw pipelineError;
  } catch (err) {
    tearingDown = true;
    const failure = classify(err);
    stop();
    // Release every stage now (pipeline would also do it, but a tick later).
    // The error is ours; the no-op listener keeps a stage nobody listens to any
    // more (pipeline already finished) from turning it into an uncaught error.
    for (const stream of [source, ...job.transforms]) {
      if (stream.destroyed) continue;
      stream.once('error', () => {});
      stream.destroy(failure);
    }
    // Let every request of this upload settle (the aborted ones settle at once)
    // so no part can land after the abort below.
    while (inflight.size > 0) await Promise.allSettled([...inflight]);
    const { Bucket, Key } = job.params;
    if (uploadId !== undefined) await job.janitor.run({ kind: 'abort-multipart', bucket: Bucket, key: Key, uploadId });
    if (objectMayExist) await job.janitor.run({ kind: 'delete-object', bucket: Bucket, key: Key });
    throw failure;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    source.off('error', onSourceError);
  }

  function classify(err: unknown): CaptureError {
    if (signal?.aborted) {
      return new CaptureError('cancelled', `upload to s3://${ctx.bucket}/${ctx.key ?? ''} was cancelled`, {
        cause: signal.reason,
      });
    }
    // The engine's own error (target_closed, snapshot_truncated, …) wins over what it caused here.
    if (sourceError !== undefined) return toCaptureError(sourceError, 'internal');
    return toStorageError(storageFailure ?? err, ctx);
  }
}
