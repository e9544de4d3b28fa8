/** Storage selection: `file://DIR` (or a plain path) or `s3://BUCKET/PREFIX`. */
import { resolve } from 'node:path';

/** Filesystem storage. */
export interface FileStorageConfig {
  kind: 'file';
  dir: string;
}

/** S3-compatible object storage. Credentials come from the AWS default chain. */
export interface S3StorageConfig {
  kind: 's3';
  bucket: string;
  prefix: string;
  endpoint: string | undefined;
  /** Undefined: the AWS chain decides (AWS_REGION, ~/.aws/config); us-east-1 when an endpoint is set. */
  region: string | undefined;
  forcePathStyle: boolean;
  sse: { kind: 'AES256' } | { kind: 'aws:kms'; kmsKeyId: string } | undefined;
  storageClass: string | undefined;
  partSizeBytes: number;
  queueSize: number;
}

export type StorageConfig = FileStorageConfig | S3StorageConfig;

/** S3 settings that come from their own variables or flags. */
export interface S3Settings {
  endpoint?: string | undefined;
  region?: string | undefined;
  forcePathStyle?: boolean | undefined;
  sse?: 'AES256' | 'aws:kms' | undefined;
  kmsKeyId?: string | undefined;
  storageClass?: string | undefined;
  partSizeBytes?: number | undefined;
  queueSize?: number | undefined;
}

// S3 bucket naming rules: 3-63 lowercase letters, digits, dots and hyphens,
// starting and ending with a letter or digit, no "..", not an IPv4 address.
const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const IPV4_RE = /^\d+\.\d+\.\d+\.\d+$/;

// Only classes whose objects can be read (and presigned) right away: an
// artifact in GLACIER / DEEP_ARCHIVE needs a restore before anyone can open it.
// MinIO accepts STANDARD and REDUCED_REDUNDANCY.
/** The S3 storage classes heapcap accepts (HEAPCAP_S3_STORAGE_CLASS and the S3 store's config). */
/**
 * Parts an upload sends at once when HEAPCAP_S3_QUEUE_SIZE is not set: as many
 * as keep its part buffers (one more than the queue: the part being filled)
 * within 24 MiB, 1 to 4. 8 MiB parts: 2 at once (24 MiB); 5 MiB: 3 (20 MiB);
 * 16 MiB and more: 1. The capturing process's memory is its ~75 MB, the
 * engine's 16 MiB memory buffer and these (bench/rss.ts: < 150 MB into MinIO);
 * gzipped snapshots leave at 10-20 MB/s, which two 8 MiB parts in flight carry
 * easily, and a slower store only grows the spill file.
 */
export function defaultS3QueueSize(partSizeBytes: number): number {
  const budget = 24 * 1024 * 1024;
  return Math.max(1, Math.min(4, Math.floor(budget / partSizeBytes) - 1));
}

export const S3_STORAGE_CLASSES = ['STANDARD', 'STANDARD_IA', 'ONEZONE_IA', 'INTELLIGENT_TIERING', 'GLACIER_IR', 'REDUCED_REDUNDANCY'] as const;

/** Why `bucket` is not a valid S3 bucket name, or undefined when it is. */
export function bucketProblem(bucket: string): string | undefined {
  if (!BUCKET_RE.test(bucket)) return '3-63 lowercase letters, digits, dots, hyphens; starting and ending with a letter or digit';
  if (bucket.includes('..')) return 'two dots in a row';
  if (IPV4_RE.test(bucket)) return 'formatted like an IP address';
  return undefined;
}

/** Parse a storage URL; throws an Error whose message says how to fix it. */
export function parseStorageUrl(value: string, s3: S3Settings = {}): StorageConfig {
  if (value.startsWith('s3://')) {
    const rest = value.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
    const problem = bucketProblem(bucket);
    if (problem !== undefined) {
      throw new Error(`"${bucket}" is not a valid bucket name in ${value} (${problem}): use s3://BUCKET/PREFIX`);
    }
    // Keys are <prefix>/<target>/…: an empty, "." or ".." segment makes keys that
    // S3 stores literally but tools and MinIO's filesystem layout treat differently.
    if (prefix !== '' && prefix.split('/').some((part) => part === '' || part === '.' || part === '..')) {
      throw new Error(`the key prefix "${prefix}" in ${value} has an empty, "." or ".." segment: use s3://BUCKET/PREFIX with plain segments`);
    }
    if (s3.sse === 'aws:kms' && s3.kmsKeyId === undefined) {
      throw new Error('SSE aws:kms needs a KMS key id (HEAPCAP_S3_KMS_KEY_ID)');
    }
    return {
      kind: 's3',
      bucket,
      prefix,
      endpoint: s3.endpoint,
      // Without an endpoint this is AWS: leave the region to the AWS chain (AWS_REGION, profile).
      region: s3.region ?? (s3.endpoint !== undefined ? 'us-east-1' : undefined),
      forcePathStyle: s3.forcePathStyle ?? s3.endpoint !== undefined,
      sse: s3.sse === undefined ? undefined : s3.sse === 'AES256' ? { kind: 'AES256' } : { kind: 'aws:kms', kmsKeyId: s3.kmsKeyId ?? '' },
      storageClass: s3.storageClass,
      partSizeBytes: s3.partSizeBytes ?? 8 * 1024 * 1024,
      queueSize: s3.queueSize ?? defaultS3QueueSize(s3.partSizeBytes ?? 8 * 1024 * 1024),
    };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !value.startsWith('file://')) {
    throw new Error(`unsupported storage URL "${value}": use file://DIR or s3://BUCKET/PREFIX`);
  }
  const dir = value.startsWith('file://') ? value.slice('file://'.length) : value;
  if (dir === '') throw new Error('file:// needs a directory, e.g. file://./data/captures');
  return { kind: 'file', dir: resolve(dir) };
}
