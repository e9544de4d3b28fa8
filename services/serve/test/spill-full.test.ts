/**
 * Issue 25's "disk full for the spill": `bin/heapcap serve` with a 1 MiB memory
 * ceiling spilling to a 2 MiB tmpfs, capturing an 80 MB heap while MinIO is
 * frozen, so the chunks the store cannot take fill the spill until ENOSPC. The
 * capture must fail with `storage_failed` naming the spill directory, in the
 * phase it was in; leave no object, no multipart upload and no spill file; the
 * target must run on (not left paused); and once the disk has room again
 * (the tmpfs grown), the next capture must succeed without a restart.
 *
 * Needs root for the tmpfs mount (testkit's mountTmpfs); without it the test
 * fails saying so.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { fixturePath, heapcapS3Env, mountTmpfs, startDevServe, startMinio, startNodeTarget, startRedis, tmpDir, waitFor, type MinioServer, type NodeTarget, type RedisServer, type RunningHeapcap, type Tmpfs, type TmpDir } from '@heapcap/testkit';

let dir: TmpDir;
let spillFs: Tmpfs | undefined;
let spill: string;
let redis: RedisServer;
let minio: MinioServer;
let big: NodeTarget;
let small: NodeTarget;
let serve: RunningHeapcap | undefined;

before(async () => {
  [dir, redis, minio, big, small] = await Promise.all([
    tmpDir('heapcap-spill-full'),
    startRedis(),
    startMinio(),
    startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '80' } }),
    startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '4' } }),
  ]);
  await minio.createBucket('heapcap');
  spillFs = await mountTmpfs(join(dir.path, 'spill'), 2);
  spill = spillFs.path;
});
after(async () => {
  minio?.resume();
  await serve?.stop('SIGTERM');
  await Promise.all([big?.kill('SIGKILL'), small?.kill('SIGKILL')]);
  await spillFs?.unmount();
  await minio?.stop();
  await redis?.stop();
  await dir?.cleanup();
});

interface Wire {
  id: string;
  status: string;
  phase: string | null;
  attempts: number;
  error: { code: string; message: string; phase?: string } | null;
}

async function record(id: string): Promise<Wire> {
  const res = await fetch(`${serve!.url}/v1/captures/${id}`);
  return ((await res.json()) as { capture: Wire }).capture;
}

async function request(target: string): Promise<string> {
  const res = await fetch(`${serve!.url}/v1/captures`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target }) });
  assert.equal(res.status, 202, await res.clone().text());
  return ((await res.json()) as { capture: Wire }).capture.id;
}

void test('disk full for the spill: storage_failed naming the spill directory, nothing left behind, the target runs on, the next capture succeeds', { timeout: 300_000 }, async () => {
  const work = join(dir.path, 'work');
  await mkdir(work);
  await writeFile(join(work, 'targets.yaml'), `targets:\n  - { id: big, kind: node, inspect: "127.0.0.1:${big.port}" }\n  - { id: small, kind: node, inspect: "127.0.0.1:${small.port}" }\n`);
  serve = await startDevServe(work, redis.url, { ...heapcapS3Env(minio, 's3://heapcap/spill'), HEAPCAP_SPILL_DIR: spill, HEAPCAP_MEMORY_CEILING_MB: '1', HEAPCAP_LOG_LEVEL: 'info' });
  const id = await request('big');
  // Frozen once the target is paused and before its chunks flow: the store's probe passed at the start.
  await waitFor(async () => (await record(id)).phase === 'generate', { timeoutMs: 60_000, intervalMs: 10, what: 'the capture in generate' });
  minio.pause();
  // The record ends while MinIO is still frozen: the spill's failure does not wait on the store.
  const final = await waitFor(
    async () => {
      const r = await record(id);
      return r.status === 'queued' || r.status === 'running' ? undefined : r;
    },
    { timeoutMs: 180_000, intervalMs: 250, what: 'the capture to end' },
  ).catch(async (err: Error) => {
    const said = serve!.stdout.lines().filter((l) => !l.includes('incoming request') && !l.includes('request completed'));
    throw new Error(`${err.message}; record ${JSON.stringify(await record(id))}; spill dir ${JSON.stringify(await spillFs!.files())}; serve said:\n${said.slice(-25).join('\n')}`);
  });
  minio.resume();
  assert.equal(final.status, 'failed', JSON.stringify(final));
  assert.equal(final.error?.code, 'storage_failed');
  assert.ok(final.error?.message.includes(spill), final.error?.message);
  assert.match(final.error?.message ?? '', /ENOSPC|no space/i);
  assert.equal(final.error?.phase, 'serialize', JSON.stringify(final));
  assert.equal(final.attempts, 1, 'storage_failed is not retried');
  // Nothing left: no object, no open multipart upload, no spill file.
  const objects = await minio.client.send(new ListObjectsV2Command({ Bucket: 'heapcap', Prefix: 'spill/' }));
  assert.deepEqual((objects.Contents ?? []).map((o) => o.Key), []);
  // The abort of the multipart upload may have waited for MinIO to thaw.
  await waitFor(async () => ((await minio.client.send(new ListMultipartUploadsCommand({ Bucket: 'heapcap', Prefix: 'spill/' }))).Uploads?.length ?? 0) === 0, {
    timeoutMs: 60_000,
    intervalMs: 250,
    what: 'no multipart upload left open',
  });
  assert.deepEqual(await spillFs!.files(), [], 'the spill file was removed');
  // The target's main thread runs (its stdin commands are answered): not left paused.
  assert.equal(await big.request('are-you-there', 'ERR', 10_000), 'ERR are-you-there');
  // And the service goes on once the disk has room again (the operator's fix): the next capture succeeds.
  await spillFs!.resize(256);
  const next = await request('small');
  const ok = await waitFor(
    async () => {
      const r = await record(next);
      return r.status === 'queued' || r.status === 'running' ? undefined : r;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: 'the next capture to end' },
  );
  assert.equal(ok.status, 'succeeded', JSON.stringify(ok));
});
