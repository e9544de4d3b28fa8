/** S3 sink against a real MinIO: put, manifest, read back, presign, remove, cancel. */
import { CreateMultipartUploadCommand, AbortMultipartUploadCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { isCaptureError } from '@heapcap/errors';
import { sampleManifest, startMinio, tmpDir, waitFor, type MinioServer, type TmpDir } from '@heapcap/testkit';
import { manifestKey, snapshotKey } from '../src/keys.ts';
import { createS3Sink, type S3Sink } from '../src/s3/sink.ts';
import { head, openUploads, readAll, sha256, slowSource, testRef, writeSnapshot } from './s3-fixtures.ts';

const BUCKET = 'heapcap-sink';
const PREFIX = 'team/captures';

void describe('S3 sink on MinIO', () => {
  let minio: MinioServer;
  let dir: TmpDir;
  let sink: S3Sink;
  let snapshotPath: string;
  let snapshot: Buffer;

  before(async () => {
    [minio, dir] = await Promise.all([startMinio(), tmpDir('heapcap-s3-sink')]);
    await minio.createBucket(BUCKET);
    snapshotPath = await writeSnapshot(dir.path, 100_000);
    snapshot = await readFile(snapshotPath);
    sink = createS3Sink({
      bucket: BUCKET,
      prefix: `/${PREFIX}/`,
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
      partSizeBytes: 5 * 1024 * 1024,
      queueSize: 2,
    });
  });

  after(async () => {
    await sink?.close();
    await Promise.all([minio?.stop(), dir?.cleanup()]);
  });

  void test('put streams a real snapshot: gzip, metadata, multipart, sha256, header', async () => {
    const ref = testRef(true, 'checkout-api');
    const started = performance.now();
    const stored = await sink.put(ref, createReadStream(snapshotPath));
    const ms = performance.now() - started;
    console.log(`put ${(snapshot.length / 2 ** 20).toFixed(1)} MiB → ${(stored.bytesStored / 2 ** 20).toFixed(1)} MiB gz in ${ms.toFixed(0)} ms`);

    assert.equal(sink.root, `s3://${BUCKET}/${PREFIX}`);
    assert.match(stored.key, /^checkout-api\/\d{4}\/\d{2}\/\d{2}\/[0-9a-f-]{36}\.heapsnapshot\.gz$/);
    assert.equal(stored.location, `s3://${BUCKET}/${PREFIX}/${stored.key}`);
    assert.equal(stored.bytesUncompressed, snapshot.length);
    assert.equal(stored.sha256, sha256(snapshot));
    assert.equal(stored.contentType, 'application/json');
    assert.ok(stored.header !== null && stored.header.nodeCount > 100_000, 'header parsed from the snapshot');

    const objectKey = `${PREFIX}/${stored.key}`;
    const meta = await head(minio.client, BUCKET, objectKey);
    assert.ok(meta, 'object exists');
    assert.equal(meta.ContentEncoding, 'gzip');
    assert.equal(meta.ContentType, 'application/json');
    assert.equal(meta.ContentLength, stored.bytesStored);
    assert.deepEqual(meta.Metadata, { 'capture-id': ref.captureId, 'target-id': 'checkout-api' });
    // A multipart object's ETag is "<md5 of part md5s>-<part count>".
    assert.ok(stored.bytesStored > 5 * 1024 * 1024, 'fixture is larger than one part');
    assert.match(meta.ETag ?? '', /-\d+"$/, 'uploaded as multipart');

    const raw = await minio.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: objectKey }));
    const gz = Buffer.from(await raw.Body!.transformToByteArray());
    const plain = gunzipSync(gz);
    assert.equal(plain.length, snapshot.length);
    assert.ok(plain.equals(snapshot), 'decompresses to identical bytes');
    assert.deepEqual(await openUploads(minio.client, BUCKET, objectKey), []);

    // Reading back through the sink: stored bytes, and decompressed on the fly.
    assert.ok((await readAll(await sink.open(stored.key))).equals(gz));
    assert.ok((await readAll(await sink.open(stored.key, { decompress: true }))).equals(snapshot));

    // Manifest written last, beside the snapshot.
    const { key: mKey, location: mLocation } = await sink.putManifest(ref, { ...sampleManifest(ref, stored), sha256: stored.sha256 });
    assert.equal(mKey, manifestKey(ref));
    assert.equal(mLocation, `s3://${BUCKET}/${PREFIX}/${mKey}`, 'what the CLI prints');
    const manifest = JSON.parse((await readAll(await sink.open(mKey))).toString('utf8')) as { sha256: string };
    assert.equal(manifest.sha256, stored.sha256);

    // remove deletes both.
    await sink.remove(ref);
    assert.equal(await head(minio.client, BUCKET, objectKey), undefined);
    assert.equal(await head(minio.client, BUCKET, `${PREFIX}/${mKey}`), undefined);
    await assert.rejects(sink.open(stored.key), (err) => isCaptureError(err, 'storage_failed'));
  });

  void test('small uncompressed snapshot goes up as a single PutObject', async () => {
    const small = Buffer.from(JSON.stringify({ snapshot: { meta: {}, node_count: 0, edge_count: 0 }, nodes: [] }));
    const ref = testRef(false);
    const stored = await sink.put(ref, Readable.from([small]));
    assert.match(stored.key, /\.heapsnapshot$/);
    assert.equal(stored.bytesStored, small.length);
    const meta = await head(minio.client, BUCKET, `${PREFIX}/${stored.key}`);
    assert.equal(meta?.ContentEncoding, undefined);
    assert.ok((await readAll(await sink.open(stored.key, { decompress: true }))).equals(small));
  });

  void test('presigned GET URL serves the artifact and expires', async () => {
    const ref = testRef(true);
    const stored = await sink.put(ref, createReadStream(snapshotPath));
    const url = await sink.presign(stored.key);
    assert.match(url, /X-Amz-Expires=900(&|$)/, 'default expiry 15 minutes');
    const res = await fetch(url);
    assert.equal(res.status, 200);
    // fetch() undoes Content-Encoding: gzip, so this is the snapshot JSON itself.
    assert.equal(sha256(Buffer.from(await res.arrayBuffer())), stored.sha256);

    const short = await sink.presign(stored.key, { expiresInSeconds: 1 });
    await sleep(2100);
    assert.equal((await fetch(short)).status, 403, 'expired URL is refused');
    await assert.rejects(sink.presign(stored.key, { expiresInSeconds: 0 }), (err) => isCaptureError(err, 'invalid_input'));
  });

  void test('ListMultipartUploads sees an open upload (control for the "no orphans" checks)', async () => {
    const key = `${PREFIX}/control/orphan.gz`;
    const created = await minio.client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
    assert.deepEqual(await openUploads(minio.client, BUCKET, key), [key]);
    await minio.client.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: created.UploadId }));
    assert.deepEqual(await openUploads(minio.client, BUCKET, key), []);
  });

  void test('abort signal mid-upload → cancelled, source destroyed, nothing left', async () => {
    const ref = testRef(false);
    const source = slowSource(60, 512 * 1024, 25);
    const controller = new AbortController();
    const put = sink.put(ref, source.stream, { signal: controller.signal });
    // Cancel once the multipart upload exists, i.e. really mid-upload.
    await waitFor(async () => (await openUploads(minio.client, BUCKET)).length > 0, {
      timeoutMs: 10_000,
      what: 'an open multipart upload',
    });
    const t0 = performance.now();
    controller.abort();
    await assert.rejects(put, (err) => isCaptureError(err, 'cancelled'));
    console.log(`cancelled in ${(performance.now() - t0).toFixed(0)} ms`);
    assert.ok(source.stream.destroyed, 'source released');
    assert.equal(sink.pendingCleanups, 0);
    assert.deepEqual(await openUploads(minio.client, BUCKET, `${PREFIX}/${snapshotKey(ref)}`), []);
    assert.equal(await head(minio.client, BUCKET, `${PREFIX}/${snapshotKey(ref)}`), undefined);
  });

  void test('signal already aborted → cancelled before any upload, source destroyed', async () => {
    const ref = testRef(true);
    const source = slowSource(4, 1024, 1);
    await assert.rejects(sink.put(ref, source.stream, { signal: AbortSignal.abort() }), (err) => isCaptureError(err, 'cancelled'));
    assert.ok(source.stream.destroyed);
    assert.equal(await head(minio.client, BUCKET, `${PREFIX}/${snapshotKey(ref)}`), undefined);
  });
});
