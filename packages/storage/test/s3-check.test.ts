/** The preflight write check and server-side encryption, against real MinIO servers. */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { isCaptureError, type CaptureError } from '@heapcap/errors';
import { startMinio, freePort, type MinioServer } from '@heapcap/testkit';
import type { S3SinkConfigInput } from '../src/s3/config.ts';
import { createS3Sink, type S3Sink } from '../src/s3/sink.ts';
import { head, readAll, testRef } from './s3-fixtures.ts';

const BUCKET = 'heapcap-check';

/** Runs check() on a throwaway sink and returns the CaptureError it rejects with, and how long it took. */
async function failingCheck(config: S3SinkConfigInput): Promise<{ err: CaptureError; ms: number }> {
  const sink = createS3Sink(config);
  const t0 = performance.now();
  try {
    await sink.check();
  } catch (err) {
    assert.ok(isCaptureError(err), `not a CaptureError: ${String(err)}`);
    return { err, ms: performance.now() - t0 };
  } finally {
    await sink.close();
  }
  assert.fail('check() succeeded');
}

void describe('check() against MinIO without KMS', () => {
  let minio: MinioServer;
  const base = (): S3SinkConfigInput => ({
    bucket: BUCKET,
    prefix: 'pre',
    endpoint: minio.endpoint,
    credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
    retry: { checkBudgetMs: 2000, baseDelayMs: 100, maxDelayMs: 400 },
    timeouts: { connectMs: 500 },
  });

  before(async () => {
    minio = await startMinio();
    await minio.createBucket(BUCKET);
  });
  after(async () => {
    await minio?.stop();
  });

  void test('good credentials and bucket: passes and leaves no probe behind', async () => {
    const sink = createS3Sink(base());
    try {
      await sink.check();
    } finally {
      await sink.close();
    }
    const listed = await minio.client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    assert.equal(listed.KeyCount ?? 0, 0);
  });

  void test('wrong secret → storage_auth_failed', async () => {
    const { err } = await failingCheck({ ...base(), credentials: { accessKeyId: minio.accessKey, secretAccessKey: 'not-the-secret' } });
    assert.equal(err.code, 'storage_auth_failed');
    assert.equal(err.details?.s3Code, 'SignatureDoesNotMatch');
    assert.match(err.message, new RegExp(`s3://${BUCKET}/pre/.* at ${minio.endpoint}`));
    assert.ok(err.hint);
  });

  void test('unknown access key → storage_auth_failed', async () => {
    const { err } = await failingCheck({ ...base(), credentials: { accessKeyId: 'nobody', secretAccessKey: 'whatever-secret' } });
    assert.equal(err.code, 'storage_auth_failed');
    assert.equal(err.details?.s3Code, 'InvalidAccessKeyId');
  });

  void test('missing bucket → storage_bucket_missing', async () => {
    const { err } = await failingCheck({ ...base(), bucket: 'no-such-bucket' });
    assert.equal(err.code, 'storage_bucket_missing');
    assert.match(err.message, /no-such-bucket/);
    assert.ok(err.hint?.includes('create the bucket'));
  });

  void test('SSE-S3 on a MinIO without KMS → storage_failed (NotImplemented), not "unavailable"', async () => {
    const { err } = await failingCheck({ ...base(), sse: { kind: 'AES256' } });
    assert.equal(err.code, 'storage_failed');
    assert.equal(err.details?.s3Code, 'NotImplemented');
  });
});

void test('closed port → storage_unavailable after the check budget, retried', async () => {
  const port = await freePort();
  const { err, ms } = await failingCheck({
    bucket: BUCKET,
    endpoint: `http://127.0.0.1:${port}`,
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    retry: { checkBudgetMs: 1500, baseDelayMs: 100, maxDelayMs: 400 },
  });
  console.log(`closed port reported after ${ms.toFixed(0)} ms, ${String(err.details?.attempts)} attempts`);
  assert.equal(err.code, 'storage_unavailable');
  assert.equal(err.details?.s3Code, 'ECONNREFUSED');
  assert.ok(Number(err.details?.attempts) > 1, 'retried');
  assert.ok(ms < 1500 + 1000, 'within the check budget');
  assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
});

void test('unresolvable host → storage_unavailable', async () => {
  const { err } = await failingCheck({
    bucket: BUCKET,
    endpoint: 'http://heapcap-no-such-host.invalid:9000',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    retry: { checkBudgetMs: 1000, baseDelayMs: 100, maxDelayMs: 400 },
  });
  assert.equal(err.code, 'storage_unavailable');
  // ENOTFOUND from a resolver that answers; EAI_AGAIN where DNS itself is unreachable.
  assert.ok(['ENOTFOUND', 'EAI_AGAIN'].includes(String(err.details?.s3Code)), String(err.details?.s3Code));
});

void describe('server-side encryption on MinIO with a KMS key', () => {
  let minio: MinioServer;
  let sink: S3Sink | undefined;

  before(async () => {
    minio = await startMinio({ kms: true });
    await minio.createBucket(BUCKET);
  });
  after(async () => {
    await sink?.close();
    await minio?.stop();
  });

  for (const kind of ['AES256', 'aws:kms'] as const) {
    void test(`SSE ${kind}: check passes, put is encrypted and reads back`, async () => {
      await sink?.close();
      sink = createS3Sink({
        bucket: BUCKET,
        endpoint: minio.endpoint,
        credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
        sse: kind === 'AES256' ? { kind } : { kind, kmsKeyId: minio.kmsKeyId },
        storageClass: 'REDUCED_REDUNDANCY',
      });
      await sink.check();
      const data = Buffer.from('{"snapshot":{"meta":{},"node_count":1,"edge_count":0},"nodes":[0]}');
      const stored = await sink.put(testRef(true), Readable.from([data]));
      const meta = await head(minio.client, BUCKET, stored.key);
      assert.equal(meta?.ServerSideEncryption, kind);
      assert.equal(meta?.StorageClass, 'REDUCED_REDUNDANCY');
      assert.ok((await readAll(await sink.open(stored.key, { decompress: true }))).equals(data));
    });
  }
});
