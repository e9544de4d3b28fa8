/**
 * Streams a source through transforms into one S3 object as a multipart
 * upload (a single PutObject when it fits in one part), all or nothing.
 *
 * Memory bound: the bytes are copied into part buffers of `partSize`, at most
 * `queueSize` uploading and one filling; a buffer is reused once its part is
 * stored, so a capture allocates at most queueSize + 1 of them whatever its
 * size. While every slot is busy the loop stops reading, so backpressure
 * reaches the source (the engine's spill-to-disk buffer absorbs it).
 * A retried part is re-sent from its buffer; retries cost no memory.
 *
 * Why not lib-storage's `Upload`: its chunker keeps every incoming chunk until
 * a part is full, then concatenates them into a new Buffer (and the next part
 * starts from a view of that one). For a capture that is partSize of chunks
 * plus partSize of copy per part, all garbage for the GC to find later: into
 * MinIO the capturing process peaked at 156-165 MB RSS with it (bench/rss.ts),
 * against 150 MB allowed. It also gave no way to hand the engine's blocks back
 * (`release`) when the object is not gzipped.
 *
 * Failure handling:
 * - the first failed request (already retried by the SDK until the budget)
 *   aborts the others and the upload at once;
 * - the upload id is recorded from CreateMultipartUpload (which is never
 *   aborted mid-flight, so its id is never lost), and after every in-flight
 *   request has settled it is aborted explicitly (S3Janitor: retried in the
 *   background if the store is down right now);
 * - a PutObject / CompleteMultipartUpload that was cut off may still have
 *   completed on the server, so the key is deleted too.
 */
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
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
  /** Called with each chunk once copied into a part (PutOptions.release; only where no transform copies first). */
  release?: (chunk: Uint8Array) => void;
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
  const { source, signal, ctx, params } = job;
  // Aborts every request of this upload except CreateMultipartUpload.
  const internal = new AbortController();
  const inflight = new Set<Promise<unknown>>();
  let uploadId: string | undefined;
  let objectMayExist = false;
  let storageFailure: unknown;
  let sourceError: unknown;
  let tearingDown = false;
  let pipelineError: unknown;
  const body = pipeline([source, ...job.transforms], (err) => {
    pipelineError = err ?? undefined;
  }) as unknown as Readable;

  const stop = (reason: unknown): void => {
    // What we inject into the streams from here on is not the source's own error.
    tearingDown = true;
    if (!internal.signal.aborted) internal.abort();
    if (!body.destroyed) {
      body.once('error', () => undefined);
      body.destroy(reason instanceof Error ? reason : new Error(String(reason)));
    }
  };
  const onSourceError = (err: unknown): void => {
    if (!tearingDown) sourceError ??= err;
  };
  source.on('error', onSourceError);

  const realSend = job.client.send.bind(job.client) as unknown as Send;
  const send = <T>(command: unknown, abortable = true): Promise<T> => {
    if (command instanceof PutObjectCommand || command instanceof CompleteMultipartUploadCommand) objectMayExist = true;
    const sent = realSend(command, abortable ? { abortSignal: internal.signal } : {}) as Promise<T>;
    inflight.add(sent);
    sent
      .then(undefined, (err: unknown) => {
        if (internal.signal.aborted) return;
        // The SDK already retried this request until the budget: the store is failing.
        storageFailure ??= err;
        stop(err);
      })
      .finally(() => inflight.delete(sent));
    return sent;
  };

  const onAbort = (): void => stop(signal?.reason ?? new Error('cancelled'));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal?.aborted) throw signal.reason;
    await uploadParts();
    if (pipelineError !== undefined) throw pipelineError;
  } catch (err) {
    tearingDown = true;
    const failure = classify(err);
    stop(failure);
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
    const { Bucket, Key } = params;
    if (uploadId !== undefined) await job.janitor.run({ kind: 'abort-multipart', bucket: Bucket, key: Key, uploadId });
    if (objectMayExist) await job.janitor.run({ kind: 'delete-object', bucket: Bucket, key: Key });
    throw failure;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    source.off('error', onSourceError);
  }

  /** Reads `body` into part buffers and uploads them, at most queueSize at once; then completes. */
  async function uploadParts(): Promise<void> {
    const { Bucket, Key } = params;
    const { partSize, queueSize } = job;
    // As lib-storage did: with the SDK's default checksums, parts carry a CRC32 the completion repeats.
    const crc32 = (await job.client.config.requestChecksumCalculation()) === 'WHEN_SUPPORTED';
    const free: Buffer[] = [];
    const running = new Set<Promise<void>>();
    const completed: CompletedPart[] = [];
    let created: Promise<string> | undefined;
    let part: Buffer | undefined;
    let filled = 0;
    let partNumber = 0;
    const check = (): void => {
      if (internal.signal.aborted) throw storageFailure ?? signal?.reason ?? new Error('the upload was stopped');
    };
    const submit = async (buf: Buffer, length: number): Promise<void> => {
      while (running.size >= queueSize) {
        await Promise.race(running);
        check();
      }
      created ??= send<{ UploadId?: string }>(
        new CreateMultipartUploadCommand({ ...params, ...(crc32 ? { ChecksumAlgorithm: 'CRC32' as const } : {}) }),
        false,
      ).then((out) => {
        if (out.UploadId === undefined) throw new Error('CreateMultipartUpload returned no UploadId');
        uploadId = out.UploadId;
        return out.UploadId;
      });
      const id = await created;
      check();
      const number = ++partNumber;
      const sent = send<{ ETag?: string; ChecksumCRC32?: string }>(
        new UploadPartCommand({ Bucket, Key, UploadId: id, PartNumber: number, Body: length === buf.length ? buf : buf.subarray(0, length), ContentLength: length }),
      ).then(
        (out) => {
          if (out.ETag === undefined) {
            storageFailure ??= new Error(`part ${number} came back without an ETag`);
            stop(storageFailure);
            return;
          }
          completed.push({ PartNumber: number, ETag: out.ETag, ...(out.ChecksumCRC32 === undefined ? {} : { ChecksumCRC32: out.ChecksumCRC32 }) });
          // Stored: the buffer takes the next part.
          free.push(buf);
        },
        () => undefined, // recorded by send()
      );
      const settled = sent.finally(() => running.delete(settled));
      running.add(settled);
    };

    for await (const chunk of body as AsyncIterable<Buffer>) {
      for (let from = 0; from < chunk.length; ) {
        part ??= free.pop() ?? Buffer.allocUnsafeSlow(partSize);
        const n = chunk.copy(part, filled, from);
        from += n;
        filled += n;
        if (filled === partSize) {
          const full = part;
          part = undefined;
          filled = 0;
          await submit(full, partSize);
        }
      }
      // Copied: an engine block (no gzip) can be refilled.
      job.release?.(chunk);
      check();
    }
    check();
    if (partNumber === 0) {
      // Everything fits in one part: one PutObject.
      const whole = part === undefined ? Buffer.alloc(0) : part.subarray(0, filled);
      await send(new PutObjectCommand({ ...params, Body: whole, ContentLength: filled }));
      return;
    }
    if (part !== undefined && filled > 0) await submit(part, filled);
    while (running.size > 0) await Promise.race(running);
    check();
    completed.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
    await send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: completed } }));
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
