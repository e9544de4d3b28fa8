/** S3 sink configuration: defaults, validation, s3:// URLs. No server needed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCaptureError } from '@heapcap/errors';
import { parseS3Url, s3SinkConfigSchema } from '../src/s3/config.ts';

const MiB = 1024 * 1024;

void test('defaults: 8 MiB parts × 2 (part buffers within 24 MiB), retry budget, path style and us-east-1 with an endpoint', () => {
  const c = s3SinkConfigSchema.parse({ bucket: 'captures', endpoint: 'http://127.0.0.1:9000' });
  assert.equal(c.prefix, '');
  assert.equal(c.partSizeBytes, 8 * MiB);
  assert.equal(c.queueSize, 2);
  // The queue follows the part size unless it is set.
  assert.equal(s3SinkConfigSchema.parse({ bucket: 'captures', partSizeBytes: 5 * MiB }).queueSize, 3);
  assert.equal(s3SinkConfigSchema.parse({ bucket: 'captures', partSizeBytes: 64 * MiB }).queueSize, 1);
  assert.equal(s3SinkConfigSchema.parse({ bucket: 'captures', partSizeBytes: 64 * MiB, queueSize: 6 }).queueSize, 6);
  assert.equal(c.region, 'us-east-1');
  assert.equal(c.forcePathStyle, true);
  assert.deepEqual(c.retry, { maxAttempts: 20, baseDelayMs: 200, maxDelayMs: 5000, budgetMs: 60_000, checkBudgetMs: 10_000 });
  assert.deepEqual(c.timeouts, { connectMs: 3000, idleMs: 15_000, requestMs: 120_000 });
  assert.equal(c.credentials, undefined);
});

void test('without an endpoint region and credentials are left to the AWS chain', () => {
  const c = s3SinkConfigSchema.parse({ bucket: 'captures', prefix: '/a/b/' });
  assert.equal(c.region, undefined);
  assert.equal(c.forcePathStyle, false);
  assert.equal(c.prefix, 'a/b');
});

void test('partial retry settings keep the other defaults', () => {
  const c = s3SinkConfigSchema.parse({ bucket: 'captures', retry: { budgetMs: 5000 } });
  assert.equal(c.retry.budgetMs, 5000);
  assert.equal(c.retry.maxAttempts, 20);
});

void test('rejects: small parts, bad bucket, unknown keys, SSE-KMS without key id, archive storage class', () => {
  const bad: unknown[] = [
    { bucket: 'captures', partSizeBytes: 4 * MiB },
    { bucket: 'Captures_Upper' },
    { bucket: 'captures', endpoint: 'ftp://x' },
    { bucket: 'captures', surprise: true },
    { bucket: 'captures', sse: { kind: 'aws:kms' } },
    { bucket: 'captures', storageClass: 'DEEP_ARCHIVE' },
    { bucket: 'captures', credentials: { accessKeyId: 'a' } },
    { bucket: 'captures', queueSize: 0 },
  ];
  for (const input of bad) {
    assert.equal(s3SinkConfigSchema.safeParse(input).success, false, JSON.stringify(input));
  }
});

void test('parseS3Url', () => {
  assert.deepEqual(parseS3Url('s3://captures'), { bucket: 'captures', prefix: '' });
  assert.deepEqual(parseS3Url('s3://captures/'), { bucket: 'captures', prefix: '' });
  assert.deepEqual(parseS3Url('s3://captures/team/prod/'), { bucket: 'captures', prefix: 'team/prod' });
  for (const bad of ['captures/x', 'file:///tmp', 's3://', 's3://UPPER/x', 'https://captures.s3.amazonaws.com/x']) {
    assert.throws(() => parseS3Url(bad), (err) => isCaptureError(err, 'invalid_input'), bad);
  }
});
