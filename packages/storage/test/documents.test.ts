/** Derived documents (summary, analysis) beside a snapshot, on a real directory and a real MinIO: put, read back, removed with the capture. */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { isCaptureError } from '@heapcap/errors';
import { startMinio, tmpDir, type MinioServer, type TmpDir } from '@heapcap/testkit';
import { createFileSink } from '../src/fs/sink.ts';
import { createS3Sink } from '../src/s3/sink.ts';
import { siblingOf } from '../src/keys.ts';
import type { ArtifactStore } from '../src/types.ts';
import { testRef } from './s3-fixtures.ts';

const SNAPSHOT = '{"snapshot":{"meta":{},"node_count":0,"edge_count":0},"nodes":[],"edges":[],"strings":[]}';

/** The same contract on both stores. */
async function documentsRoundTrip(store: ArtifactStore): Promise<void> {
  const ref = testRef(true, 'docs-target');
  const stored = await store.put(ref, Readable.from([Buffer.from(SNAPSHOT)]));
  const summary = { schemaVersion: 1, classes: [{ name: 'Größe', count: 3, selfSize: 96 }] };
  const { key: summaryKey, location: summaryLocation } = await store.putDocument(ref, 'summary', summary);
  assert.equal(summaryKey, stored.key.replace(/\.heapsnapshot\.gz$/, '.summary.json'));
  // The location is the artifact's, beside it: the path or s3:// URL a person is shown.
  assert.equal(summaryLocation, stored.location.replace(/\.heapsnapshot\.gz$/, '.summary.json'));
  assert.equal(siblingOf(stored.location, 'summary'), summaryLocation);
  assert.equal(siblingOf(stored.key, 'manifest'), stored.key.replace(/\.heapsnapshot\.gz$/, '.manifest.json'));
  assert.deepEqual(await store.getDocument(summaryKey), summary);
  // By the snapshot's key (what a record keeps): the same directory.
  const { key: analysisKey } = await store.putDocument({ key: stored.key }, 'analysis', { schemaVersion: 1, classes: [] });
  assert.equal(analysisKey, stored.key.replace(/\.heapsnapshot\.gz$/, '.analysis.json'));
  assert.deepEqual(await store.getDocument(analysisKey), { schemaVersion: 1, classes: [] });
  // Removing the capture removes its documents too.
  await store.remove({ key: stored.key });
  assert.equal(await store.getDocument(summaryKey), null);
  assert.equal(await store.getDocument(analysisKey), null);
  await assert.rejects(store.getDocument('../escape.summary.json'), (err: unknown) => isCaptureError(err) && err.code === 'invalid_input');
}

void describe('derived documents', () => {
  let dir: TmpDir;
  let minio: MinioServer;

  before(async () => {
    [dir, minio] = await Promise.all([tmpDir('heapcap-documents'), startMinio()]);
    await minio.createBucket('heapcap-docs');
  });
  after(async () => {
    await Promise.all([dir?.cleanup(), minio?.stop()]);
  });

  void test('filesystem: written owner-only beside the snapshot, read back, removed with it', async () => {
    const store = createFileSink({ dir: join(dir.path, 'fs') });
    const ref = testRef(false, 'docs-target');
    await store.put(ref, Readable.from([Buffer.from(SNAPSHOT)]));
    const { key } = await store.putDocument(ref, 'summary', { a: 1 });
    const path = join(store.root, ...key.split('/'));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await readFile(path, 'utf8'), '{"a":1}\n');
    await documentsRoundTrip(store);
  });

  void test('S3: one PutObject beside the snapshot, read back, removed with it', async () => {
    const store = createS3Sink({
      bucket: 'heapcap-docs',
      prefix: 'p',
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
    });
    try {
      await documentsRoundTrip(store);
    } finally {
      await store.close();
    }
  });
});
