/** Reading artifacts back from S3: a stream (optionally gunzipped) or a presigned GET URL. */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { CaptureError } from '@heapcap/errors';
import type { OpenOptions, PresignOptions } from '../types.ts';
import { toStorageError, type S3ErrorContext } from './errors.ts';


/** A resolved object address plus the context for error messages. */
export interface S3ObjectLocation {
  bucket: string;
  objectKey: string;
  ctx: S3ErrorContext;
}

/** Default presigned URL lifetime: long enough to click from Slack, short enough to not leak for long. */
export const DEFAULT_PRESIGN_SECONDS = 900;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/** Opens an object as a Readable; a missing key rejects with `storage_failed` (details.s3Code 'NoSuchKey'). */
export async function openS3Artifact(
  client: S3Client,
  loc: S3ObjectLocation,
  options: OpenOptions = {},
): Promise<Readable> {
  let body: unknown;
  let encoding: string | undefined;
  try {
    const range = options.range === undefined ? undefined : `bytes=${options.range.start}-${options.range.end}`;
    const out = await client.send(new GetObjectCommand({ Bucket: loc.bucket, Key: loc.objectKey, Range: range }), {
      abortSignal: options.signal,
    });
    body = out.Body;
    encoding = out.ContentEncoding;
  } catch (err) {
    throw toStorageError(err, loc.ctx);
  }
  if (!(body instanceof Readable)) {
    throw new CaptureError('internal', `GetObject returned no Node stream for ${loc.objectKey}`);
  }
  const gzipped = encoding === 'gzip' || loc.objectKey.endsWith('.gz');
  if (options.decompress !== true || !gzipped) return body;
  if (options.range !== undefined) throw new CaptureError('invalid_input', 'a byte range of the stored bytes cannot be decompressed');
  // Errors of either stage destroy the returned stream with that error; the
  // caller sees them there, so the callback has nothing left to do.
  return pipeline(body, createGunzip(), () => {});
}

/** A presigned GET URL for the object, valid for `expiresInSeconds`. */
export async function presignS3Get(client: S3Client, loc: S3ObjectLocation, options: PresignOptions = {}): Promise<string> {
  const expiresIn = options.expiresInSeconds ?? DEFAULT_PRESIGN_SECONDS;
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_PRESIGN_SECONDS) {
    throw new CaptureError('invalid_input', `presign expiry must be 1..${MAX_PRESIGN_SECONDS} s, got ${expiresIn}`);
  }
  try {
    return await getSignedUrl(client, new GetObjectCommand({ Bucket: loc.bucket, Key: loc.objectKey }), { expiresIn });
  } catch (err) {
    throw toStorageError(err, loc.ctx);
  }
}
