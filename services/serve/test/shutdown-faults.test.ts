/**
 * Issue 25, defect 2: `heapcap serve` must exit on SIGTERM within its
 * shutdown grace whatever its backing services do. Before the fix, with Redis
 * down it logged `stopped` after 61 s of close steps running into their limits
 * and then kept running, reconnecting (13 minutes in one run): BullMQ's
 * close() QUITs, which waits for a Redis that does not come back.
 * Each case runs `bin/heapcap serve` as users do, against a real redis-server
 * (and MinIO), breaks one backing service, then sends SIGTERM.
 */
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import { heapcapS3Env, startDevServe, startMinio, startRedis, tmpDir, waitFor, type MinioServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { SHUTDOWN_GRACE_MS } from '@heapcap/service';

let dir: TmpDir;

before(async () => {
  dir = await tmpDir('heapcap-shutdown-faults');
});
after(async () => {
  await dir?.cleanup();
});

/** SIGTERM `serve`; the exit code and how long it took (SIGKILL only far past the grace, so an overrun shows as time). */
async function terminate(serve: RunningHeapcap): Promise<{ code: number | null; ms: number }> {
  const started = performance.now();
  const code = await serve.stop('SIGTERM', SHUTDOWN_GRACE_MS + 60_000);
  return { code, ms: performance.now() - started };
}

function assertWithinGrace(what: string, out: { code: number | null; ms: number }, serve: RunningHeapcap, t: TestContext): void {
  t.diagnostic(`${what}: exited ${out.code} after ${Math.round(out.ms)} ms`);
  assert.ok(out.ms < SHUTDOWN_GRACE_MS, `${what}: exited after ${Math.round(out.ms)} ms (grace ${SHUTDOWN_GRACE_MS} ms)\n${serve.stderr.text().slice(-3000)}`);
  assert.notEqual(out.code, null, `${what}: killed, not exited`);
}

void test('defect 2: serve exits on SIGTERM within its grace with Redis down', async (t) => {
  const redis = await startRedis();
  try {
    const serve = await startDevServe(dir.path, redis.url, { HEAPCAP_LOG_LEVEL: 'info' });
    await redis.stop();
    const out = await terminate(serve);
    assertWithinGrace('Redis down', out, serve, t);
    assert.match(serve.stdout.text(), /"msg":"stopped"/);
  } finally {
    await redis.stop();
  }
});

void test('defect 2: serve exits on SIGTERM within its grace with Redis paused (SIGSTOP)', async (t) => {
  const redis = await startRedis();
  try {
    const serve = await startDevServe(dir.path, redis.url, { HEAPCAP_LOG_LEVEL: 'info' });
    redis.pause();
    const out = await terminate(serve);
    assertWithinGrace('Redis paused', out, serve, t);
  } finally {
    redis.resume();
    await redis.stop();
  }
});

/** serve on S3 storage in a real MinIO; `fault` breaks MinIO, then SIGTERM: exits 0 within its grace. */
async function minioCase(t: TestContext, what: string, fault: (minio: MinioServer) => Promise<void>): Promise<void> {
  const redis = await startRedis();
  const minio = await startMinio();
  try {
    await minio.createBucket('heapcap');
    const serve = await startDevServe(dir.path, redis.url, heapcapS3Env(minio, 's3://heapcap/faults'));
    await fault(minio);
    const out = await terminate(serve);
    assertWithinGrace(what, out, serve, t);
    assert.equal(out.code, 0);
  } finally {
    minio.resume();
    await minio.stop();
    await redis.stop();
  }
}

void test('defect 2: serve exits on SIGTERM within its grace with MinIO down', (t) => minioCase(t, 'MinIO down', (minio) => minio.kill('SIGKILL')));

// Frozen, the store still accepts connections and answers nothing: a close that waited on it would hang.
void test('defect 2: serve exits on SIGTERM within its grace with MinIO paused (SIGSTOP)', (t) => minioCase(t, 'MinIO paused', async (minio) => minio.pause()));

void test('defect 9: serve on unwritable storage says so at start, and /readyz says why', async () => {
  const redis = await startRedis();
  try {
    // procfs refuses every mkdir (as root, a plain permission problem would not show here).
    const serve = await startDevServe(dir.path, redis.url, { HEAPCAP_STORAGE: 'file:///proc/nope/captures', HEAPCAP_LOG_LEVEL: 'info' });
    try {
      const line = await waitFor(() => serve.stdout.lines().find((l) => l.includes('artifact storage is not writable')), { timeoutMs: 15_000, what: 'the storage log line' });
      assert.match(line, /"level":50/);
      assert.match(line, /"code":"storage_failed"/);
      const res = await fetch(`${serve.url}/readyz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { error: { details: { checks: { storage: string }; reasons?: { storage: string } } } };
      assert.equal(body.error.details.checks.storage, 'unavailable');
      assert.match(body.error.details.reasons?.storage ?? '', /^storage_failed: .*\/proc\/nope/);
    } finally {
      await serve.stop();
    }
  } finally {
    await redis.stop();
  }
});
