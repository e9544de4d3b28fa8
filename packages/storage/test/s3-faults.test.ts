/**
 * Failures mid-upload against a real MinIO: the source dies, the store dies,
 * the store pauses. Each leaves either a complete object or nothing (no object,
 * no open multipart upload).
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { CaptureError, isCaptureError } from '@heapcap/errors';
import { startMinio, waitFor, type MinioServer } from '@heapcap/testkit';
import { snapshotKey } from '../src/keys.ts';
import type { S3SinkConfigInput } from '../src/s3/config.ts';
import { createS3Sink, type S3Sink, type S3SinkOptions } from '../src/s3/sink.ts';
import { head, openUploads, readAll, sha256, slowSource, testRef } from './s3-fixtures.ts';

const BUCKET = 'heapcap-faults';
const MiB = 1024 * 1024;

let minio: MinioServer;
let sink: S3Sink | undefined;

beforeEach(async () => {
  minio = await startMinio();
  await minio.createBucket(BUCKET);
});

afterEach(async () => {
  await sink?.close();
  sink = undefined;
  await minio.stop();
});

function makeSink(overrides: Partial<S3SinkConfigInput> = {}, options: S3SinkOptions = {}): S3Sink {
  sink = createS3Sink(
    {
      bucket: BUCKET,
      prefix: 'faults',
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
      partSizeBytes: 5 * MiB,
      queueSize: 2,
      ...overrides,
    },
    options,
  );
  return sink;
}

function waitForOpenUpload(): Promise<boolean> {
  return waitFor(async () => (await openUploads(minio.client, BUCKET)).length > 0, {
    timeoutMs: 15_000,
    intervalMs: 50,
    what: 'an open multipart upload',
  });
}

void test('source fails mid-upload with target_closed → that error, upload aborted, no object', async () => {
  const s3 = makeSink();
  const ref = testRef(false);
  const source = new PassThrough();
  const put = s3.put(ref, source);
  // 12 MiB: two full parts, so the multipart upload is open with parts in it.
  for (let i = 0; i < 12; i++) source.write(randomBytes(MiB));
  await waitForOpenUpload();
  source.destroy(new CaptureError('target_closed', 'the target exited during serialization'));

  await assert.rejects(put, (err) => {
    assert.ok(isCaptureError(err, 'target_closed'), `got ${String(err)}`);
    return true;
  });
  assert.equal(s3.pendingCleanups, 0);
  assert.deepEqual(await openUploads(minio.client, BUCKET, `faults/${snapshotKey(ref)}`), []);
  assert.equal(await head(minio.client, BUCKET, `faults/${snapshotKey(ref)}`), undefined);
});

void test('MinIO killed mid-upload → storage_unavailable after the retry budget; abort completes once MinIO is back', async () => {
  const budgetMs = 3000;
  const s3 = makeSink(
    {
      retry: { budgetMs, checkBudgetMs: 1000, baseDelayMs: 100, maxDelayMs: 500 },
      timeouts: { connectMs: 1000, idleMs: 2000 },
    },
    // Background cleanup slower than the test, so the orphan is observable after the restart.
    { cleanupRetryEveryMs: 60_000 },
  );
  const ref = testRef(false);
  const source = slowSource(48, 512 * 1024, 40);
  const put = s3.put(ref, source.stream);
  await waitForOpenUpload();
  await minio.kill('SIGKILL');
  const killedAt = performance.now();

  let failure: CaptureError | undefined;
  await assert.rejects(put, (err) => {
    assert.ok(isCaptureError(err, 'storage_unavailable'), `got ${String(err)}`);
    failure = err;
    return true;
  });
  const failedAfter = performance.now() - killedAt;
  console.log(`failed ${failedAfter.toFixed(0)} ms after the kill (budget ${budgetMs} ms): ${failure?.message}`);
  assert.ok(failedAfter < budgetMs + 3000, 'failed within the budget (+ cleanup attempt)');
  assert.ok(Number(failure?.details?.attempts) > 1, 'the failing request was retried');
  assert.match(failure?.message ?? '', new RegExp(`${BUCKET}.*${minio.port}`), 'message names bucket and endpoint');
  assert.equal(s3.pendingCleanups, 1, 'the abort waits for the store to come back');

  await minio.restart();
  // The orphan exists after the restart (MinIO keeps uploads on disk) …
  assert.equal((await openUploads(minio.client, BUCKET, `faults/${snapshotKey(ref)}`)).length, 1);
  // … and the janitor's retry removes it.
  assert.equal(await s3.drainCleanups(15_000), 0);
  assert.deepEqual(await openUploads(minio.client, BUCKET, `faults/${snapshotKey(ref)}`), []);
  assert.equal(await head(minio.client, BUCKET, `faults/${snapshotKey(ref)}`), undefined);
});

void test('MinIO paused (SIGSTOP) for 3 s mid-upload → put still succeeds, bytes identical', async () => {
  const s3 = makeSink({
    retry: { budgetMs: 20_000 },
    timeouts: { connectMs: 1000, idleMs: 10_000 },
  });
  const ref = testRef(true);
  const source = slowSource(40, 512 * 1024, 40);
  const started = performance.now();
  const put = s3.put(ref, source.stream);
  await waitForOpenUpload();
  minio.pause();
  try {
    await sleep(3000);
  } finally {
    minio.resume();
  }
  const stored = await put;
  const tookMs = performance.now() - started;
  console.log(`put with a 3 s pause took ${tookMs.toFixed(0)} ms`);
  assert.ok(tookMs >= 3000, 'the pause was inside the upload');
  assert.equal(stored.sha256, source.sha256);
  assert.equal(stored.bytesUncompressed, source.bytes);
  const back = await readAll(await s3.open(stored.key, { decompress: true }));
  assert.equal(sha256(back), source.sha256, 'byte-identical after the pause');
  assert.deepEqual(await openUploads(minio.client, BUCKET, `faults/${snapshotKey(ref)}`), []);
});
