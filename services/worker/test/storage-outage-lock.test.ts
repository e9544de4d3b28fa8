/**
 * Issue 25, defect 3: a storage outage must not end in `internal` nor leave
 * the target unlocked. With MinIO stopped (SIGSTOP: connections are accepted,
 * nothing answers), attempt 1 fails with `storage_unavailable`; attempt 2 first
 * cleans up attempt 1's upload, which hangs on the stopped store for longer
 * than the target lock's lease. The lease must be renewed through it: the lock
 * is held by the capture whenever its record says it is running, and the
 * capture ends with the store's code in the phase it really failed in.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { startMinio, startRedis, waitFor, type MinioServer, type RedisServer } from '@heapcap/testkit';
import { createS3Sink } from '@heapcap/storage';
import { CaptureWorker } from '../src/index.ts';
import { createHarness, FAST_TUNING, type Harness } from './helpers/harness.ts';

const BUCKET = 'outage';
/** Short, so an unrenewed lease expires well inside the cleanup (which retries the stopped store for 4 s). */
const LEASE_MS = 1_500;

let redis: RedisServer;
let minio: MinioServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
  minio = await startMinio();
  await minio.createBucket(BUCKET);
});
after(async () => {
  minio?.resume();
  await h?.cleanup();
  await minio?.stop();
  await redis?.stop();
});

/** A harness, an S3 sink on MinIO and a worker with a short target lease; MinIO is stopped before the worker starts. */
async function outageWorld(): Promise<{ harness: Harness; targetId: string }> {
  const harness = await createHarness(redis.url, { attempts: 2, backoffMs: 100 });
  const target = await harness.addTarget('outage-target', 5);
  const sink = createS3Sink({
    bucket: BUCKET,
    prefix: 'outage',
    endpoint: minio.endpoint,
    credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
    // Each call to the stopped store gives up after ~4 s: the probe (each attempt) and the cleanup (attempt 2).
    retry: { checkBudgetMs: 4_000, budgetMs: 4_000 },
    timeouts: { connectMs: 500, idleMs: 1_000 },
  });
  const worker = new CaptureWorker({
    queue: harness.newQueue(),
    sink,
    log: pino({ level: 'silent' }),
    tuning: { concurrency: 1, ...FAST_TUNING, targetLeaseMs: LEASE_MS, previousCleanupTimeoutMs: 10_000 },
  });
  harness.onCleanup(async () => {
    await worker.close(2_000);
    await sink.close();
  });
  h = harness;
  minio.pause();
  await worker.start();
  return { harness, targetId: target.id };
}

void test('defect 3: a storage outage ends storage_unavailable (not internal), and the lease is renewed through the previous attempt’s cleanup', { timeout: 120_000 }, async () => {
  const { harness, targetId } = await outageWorld();
  const { record } = await harness.queue.requestCapture({ targetId: targetId, trigger: { kind: 'rest', who: 'oncall' } });

  // Whenever the record says running (read before and after the lock), the lock is the capture's.
  const unlocked: string[] = [];
  let sawCleanup = false;
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const before = await harness.queue.getCapture(record.id);
      const holder = await harness.queue.locks.holder(targetId);
      const afterRead = await harness.queue.getCapture(record.id);
      if (before?.status === 'running' && afterRead?.status === 'running' && before.attempts === afterRead.attempts) {
        if (afterRead.phase === 'cleanup') sawCleanup = true;
        if (holder === null || !holder.startsWith(`${record.id}:`)) unlocked.push(`attempt ${afterRead.attempts} in ${afterRead.phase ?? '?'}: holder ${holder ?? 'none'}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  const final = await harness.queue.waitForCapture(record.id, 90_000);
  watching = false;
  await watcher;
  assert.equal(final?.status, 'failed');
  assert.equal(final?.attempts, 2);
  assert.equal(final?.error?.code, 'storage_unavailable', JSON.stringify(final?.error));
  // The store failed the second attempt's own probe, after the cleanup: not a phase of the first attempt.
  assert.notEqual(final?.error?.phase, 'serialize');
  assert.ok(sawCleanup, 'the record showed the cleanup phase while attempt 2 cleaned up');
  assert.deepEqual(unlocked, [], 'the target was unlocked while its capture was running');
  await waitFor(async () => (await harness.queue.locks.holder(targetId)) === null, { timeoutMs: 10_000, intervalMs: 50, what: 'the lock released' });
});

void test('defect 3: a lock lost while the previous attempt is cleaned up ends target_lock_lost in the cleanup phase, not internal', { timeout: 120_000 }, async () => {
  await h?.cleanup();
  minio.resume();
  const { harness, targetId } = await outageWorld();
  const { record } = await harness.queue.requestCapture({ targetId, trigger: { kind: 'rest', who: 'oncall' } });
  await waitFor(async () => (await harness.queue.getCapture(record.id))?.phase === 'cleanup', { timeoutMs: 60_000, intervalMs: 50, what: 'attempt 2 cleaning up' });
  // What an expired lease looks like to the worker: the lock is no longer its own.
  const holder = await harness.queue.locks.holder(targetId);
  assert.ok(holder !== null && (await harness.queue.locks.release(targetId, holder)));
  const final = await harness.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'failed');
  assert.equal(final?.error?.code, 'target_lock_lost', JSON.stringify(final?.error));
  assert.equal(final?.error?.phase, 'cleanup');
  assert.equal(final?.attempts, 2);
});

