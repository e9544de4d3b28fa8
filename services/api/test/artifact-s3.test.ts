/**
 * Artifacts on S3 (a real MinIO): streamed back decompressed or as stored,
 * or redirected to a presigned URL; every download audited; DELETE removes the
 * objects. Storage outage → /readyz 503. The succeeded record is made the way
 * a worker makes it (attempts.start → sink.put → attempts.succeed) on a real
 * snapshot of a child Node process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import type { LightMyRequestResponse as LightResponse } from 'fastify';
import { isCaptureError } from '@heapcap/errors';
import type { CaptureRecord } from '@heapcap/state';
import { createS3Sink, type ArtifactStore } from '@heapcap/storage';
import { startMinio, startRedis, tmpDir, waitFor, type MinioServer, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { auth, nodeTarget, startHarness, storeSucceededCapture, type Harness } from './harness.ts';

const BUCKET = 'heapcap-api-test';

void describe('artifacts on S3', () => {
  let redis: RedisServer;
  let minio: MinioServer;
  let dir: TmpDir;
  let sink: ArtifactStore;
  let h: Harness;
  let snapshot: Buffer;
  let record: CaptureRecord;

  before(async () => {
    [redis, minio, dir] = await Promise.all([startRedis(), startMinio(), tmpDir('heapcap-api-s3')]);
    await minio.createBucket(BUCKET);
    sink = createS3Sink({
      bucket: BUCKET,
      prefix: 'captures',
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
      // Fail fast while MinIO is paused (the readiness test).
      retry: { checkBudgetMs: 1_000 },
      timeouts: { connectMs: 500, idleMs: 1_000 },
    });
    h = await startHarness({ redisUrl: redis.url, sink, targets: [nodeTarget('app', 9229)] });

    const path = join(dir.path, 'child.heapsnapshot');
    await promisify(execFile)(process.execPath, ['-e', 'globalThis.keep = Array.from({length: 20000}, (_, i) => ({i})); require("node:v8").writeHeapSnapshot(process.argv[1])', path], { timeout: 60_000 });
    snapshot = await readFile(path);
    // What a worker does with a capture: start the attempt, store, succeed.
    record = await storeSucceededCapture(h, sink, 'app', path);
  });

  after(async () => {
    await h?.close();
    await sink?.close();
    await Promise.all([redis?.stop(), minio?.stop(), dir?.cleanup()]);
  });

  const get = (query: string): Promise<LightResponse> =>
    h.app.inject({ method: 'GET', url: `/v1/captures/${record.id}/artifact${query}`, headers: auth('runbook') });

  void it('streams the snapshot decompressed, or the stored gzip bytes', async () => {
    const plain = await get('');
    assert.equal(plain.statusCode, 200, plain.body.slice(0, 300));
    assert.ok(plain.rawPayload.equals(snapshot));
    assert.equal(Number(plain.headers['content-length']), snapshot.length);
    const gz = await get('?encoding=gzip');
    assert.equal(gz.statusCode, 200);
    assert.equal(gz.rawPayload.length, record.artifact?.bytesStored);
    assert.ok(gunzipSync(gz.rawPayload).equals(snapshot));
  });

  void it('?redirect=1 → 302 to a presigned URL that serves the object', async () => {
    const res = await get('?redirect=1');
    assert.equal(res.statusCode, 302);
    const location = String(res.headers['location']);
    assert.ok(location.startsWith(`${minio.endpoint}/${BUCKET}/captures/app/`), location);
    assert.match(location, /X-Amz-Signature=/);
    const fetched = await fetch(location);
    assert.equal(fetched.status, 200);
    // The object is stored with Content-Encoding: gzip, so fetch (like a browser) gunzips it.
    assert.equal(fetched.headers.get('content-encoding'), 'gzip');
    assert.ok(Buffer.from(await fetched.arrayBuffer()).equals(snapshot));
    const downloads = (await h.queue.audit.recent(10)).filter((e) => e.action === 'artifact.download').map((e) => e.details?.['encoding']);
    assert.deepEqual(downloads, ['redirect', 'gzip', 'identity']);
  });

  void it('storage down → /readyz 503 with storage unavailable; back → 200', async () => {
    minio.pause();
    try {
      const down = await h.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(down.statusCode, 503);
      const details = down.json<{ error: { details: { checks: unknown; reasons?: { storage?: string } } } }>().error.details;
      assert.deepEqual(details.checks, { redis: 'ok', registry: 'ok', storage: 'unavailable' });
      assert.match(details.reasons?.storage ?? '', /^storage_unavailable: /, 'the storage reason names the error code');
    } finally {
      minio.resume();
    }
    await waitFor(async () => (await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, { timeoutMs: 20_000, intervalMs: 200, what: '/readyz 200 after MinIO resumed' });
  });

  void it('DELETE removes the snapshot and manifest objects', async () => {
    const del = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${record.id}`, headers: auth('runbook') });
    assert.equal(del.statusCode, 200, del.body);
    assert.equal(del.json<{ result: string; capture: CaptureRecord }>().result, 'artifact_deleted');
    assert.equal(del.json<{ capture: CaptureRecord }>().capture.artifact, null);
    for (const key of [record.artifact?.key, record.artifact?.manifestKey]) {
      await assert.rejects(sink.open(key ?? ''), (err: unknown) => isCaptureError(err, 'storage_failed') && err.details?.['s3Code'] === 'NoSuchKey');
    }
    assert.equal((await get('')).statusCode, 409);
  });
});
