/** Download links: the API route by default; a presigned URL only when asked and the store can sign; never for a capture without an artifact. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureRecord } from '@heapcap/state';
import { artifactLink } from '../src/index.ts';

const record = { id: '01J7ZHH716228KMD1V49A92AEZ', status: 'succeeded', artifact: { key: 'demo/x.heapsnapshot.gz' } } as unknown as CaptureRecord;
// The store's presign contract (ArtifactStore.presign), recorded: the S3 store signs, the file store cannot.
const signed: { key: string; expiresInSeconds: number | undefined }[] = [];
const s3 = { canPresign: true, presign: async (key: string, o?: { expiresInSeconds?: number }) => (signed.push({ key, expiresInSeconds: o?.expiresInSeconds }), `https://s3.example/${key}?X-Amz-Signature=abc`) };
const file = { canPresign: false, presign: () => Promise.reject(new Error('file stores cannot presign')) };

void test('api links by default, presigned only where the store signs, none without an artifact', async () => {
  const settings = { publicUrl: 'https://heapcap.example', mode: 'api' as const, ttlSeconds: 600 };
  assert.deepEqual(await artifactLink(record, settings, s3), { kind: 'api', url: 'https://heapcap.example/v1/captures/01J7ZHH716228KMD1V49A92AEZ/artifact' });
  assert.deepEqual(await artifactLink(record, { ...settings, mode: 'presigned' }, s3), { kind: 'presigned', url: 'https://s3.example/demo/x.heapsnapshot.gz?X-Amz-Signature=abc', expiresInSeconds: 600 });
  assert.deepEqual(signed, [{ key: 'demo/x.heapsnapshot.gz', expiresInSeconds: 600 }]);
  assert.equal((await artifactLink(record, { ...settings, mode: 'presigned' }, file))?.kind, 'api');
  assert.equal(await artifactLink({ ...record, status: 'failed', artifact: null }, settings, s3), null);
});
