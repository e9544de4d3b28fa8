/**
 * Issue 25, defect 4: captures that succeeded before Redis lost its data keep
 * their snapshots in storage, but their records are gone: nothing finds them,
 * and retention (which walks records) would never delete them. The janitor's
 * sweep after the loss writes their records again from their manifests, once,
 * after its grace; a capture stored after the loss is left to its own worker;
 * retention then deletes an adopted capture by its age like any other. On the
 * file store and on MinIO, with real captures of a real Node target.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { startMinio, startRedis, waitFor, type MinioServer, type RedisServer } from '@heapcap/testkit';
import { createS3Sink, type ArtifactStore } from '@heapcap/storage';
import { Janitor } from '@heapcap/state/retention';
import type { CaptureRecord, HeapcapQueue } from '@heapcap/state';
import { CaptureWorker } from '../src/index.ts';
import { adoptAfterLoss, ADOPT_GRACE_MS } from '../src/scheduler/adopt.ts';
import { createHarness, FAST_TUNING, type Harness } from './helpers/harness.ts';

const BUCKET = 'adopt';
const log = pino({ level: 'silent' });

let redis: RedisServer;
let minio: MinioServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
  minio = await startMinio();
  await minio.createBucket(BUCKET);
});
after(async () => {
  await h?.cleanup();
  await minio?.stop();
  await redis?.stop();
});

async function captured(queue: HeapcapQueue, targetId: string, reason: string): Promise<CaptureRecord> {
  const { record } = await queue.requestCapture({ targetId, trigger: { kind: 'rest', who: 'oncall', reason } });
  return waitFor(
    async () => {
      const r = await queue.getCapture(record.id);
      if (r?.status === 'failed') throw new Error(`capture failed: ${JSON.stringify(r.error)}`);
      return r?.status === 'succeeded' ? r : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, what: `capture ${record.id} to succeed` },
  );
}

async function adoptionOn(name: string, storeFor: (harness: Harness) => ArtifactStore): Promise<void> {
  await h?.cleanup();
  assert.equal(await redis.cli('FLUSHALL'), 'OK');
  const harness = await createHarness(redis.url);
  h = harness;
  const store = storeFor(harness);
  const worker = new CaptureWorker({ queue: harness.newQueue(), sink: store, log, tuning: { concurrency: 1, ...FAST_TUNING } });
  harness.onCleanup(() => worker.close(2_000));
  await worker.start();
  const { queue } = harness;
  await queue.epoch.start();
  const target = await harness.addTarget(`adopt-${name}`, 5);

  const before = [await captured(queue, target.id, 'first'), await captured(queue, target.id, 'second')];
  assert.equal(await queue.epoch.check(), 'kept');
  assert.equal(await redis.cli('FLUSHALL'), 'OK');
  assert.equal(await queue.epoch.check(), 'lost', 'the sentinel is gone: the loss is recorded');
  for (const r of before) assert.equal(await queue.getCapture(r.id), null, 'the record went with the data');
  // The worker re-registers nothing here (no targets file): put the target back as a targets file sync would.
  await queue.targets.put({ id: target.id, kind: 'node', ws: target.proxy.url, labels: {} });

  // Stored after the loss was noticed: its worker wrote the record; even with that record gone, the sweep leaves it alone.
  const afterLoss = await captured(queue, target.id, 'after the loss');
  await queue.redis.del(queue.keys.record(afterLoss.id));

  const lossAt = Date.parse((await queue.epoch.lastLoss())!.at);
  assert.equal((await adoptAfterLoss({ queue, store, log }, lossAt + ADOPT_GRACE_MS - 1_000)).ran, false, 'not within the grace');
  const report = await adoptAfterLoss({ queue, store, log }, lossAt + ADOPT_GRACE_MS);
  assert.equal(report.ran, true);
  assert.deepEqual([...report.adopted].sort(), before.map((r) => r.id).sort());
  assert.deepEqual(report.unreadable, []);
  for (const old of before) {
    const adopted = (await queue.getCapture(old.id))!;
    assert.equal(adopted.status, 'succeeded');
    assert.ok(adopted.adoptedAt !== undefined);
    assert.equal(adopted.targetId, old.targetId);
    assert.deepEqual(adopted.trigger, { kind: 'rest', who: 'oncall', reason: old.trigger.reason });
    assert.equal(adopted.artifact?.key, old.artifact?.key);
    assert.equal(adopted.artifact?.manifestKey, old.artifact?.manifestKey);
    assert.equal(adopted.artifact?.sha256, old.artifact?.sha256);
    assert.equal(adopted.artifact?.bytesStored, old.artifact?.bytesStored);
    assert.equal(adopted.artifact?.summaryKey, old.artifact?.summaryKey);
    // Created when its manifest says the capture started: inside the lost record's own run.
    const created = Date.parse(adopted.createdAt);
    assert.ok(created >= Date.parse(old.createdAt) && created <= Date.parse(old.finishedAt!), `${adopted.createdAt} within ${old.createdAt}..${old.finishedAt}`);
  }
  assert.equal(await queue.getCapture(afterLoss.id), null, 'a capture stored after the loss is not adopted');
  // Found by the indexes the API lists with.
  const listed = await queue.listCaptures({ targetId: target.id, limit: 10 });
  assert.deepEqual(listed.items.map((r) => r.id).sort(), before.map((r) => r.id).sort());
  // Once per loss.
  assert.equal((await adoptAfterLoss({ queue, store, log }, lossAt + 2 * ADOPT_GRACE_MS)).ran, false);
  assert.deepEqual((await queue.epoch.lastLoss())!.orphansSwept?.adopted, 2);

  // Retention deletes an adopted capture by its age, like any other.
  const janitor = new Janitor({ queue, store, log, defaults: { keepLast: 0, maxAgeDays: 1, recordTtlMs: 30 * 86_400_000 } });
  const run = await janitor.run(Date.now() + 2 * 86_400_000);
  assert.deepEqual(run.deleted.map((d) => d.captureId).sort(), before.map((r) => r.id).sort());
  const left: string[] = [];
  for await (const m of store.listManifests()) left.push(m.key);
  assert.deepEqual(left, [afterLoss.artifact!.manifestKey], 'only the capture stored after the loss keeps its objects');
}

void test('defect 4: the file store: captures stored before Redis lost its data get their records back from their manifests, once', { timeout: 180_000 }, async () => {
  await adoptionOn('file', (harness) => harness.store);
});

void test('defect 4: S3 (MinIO): the same, through ListObjectsV2', { timeout: 180_000 }, async () => {
  await adoptionOn('s3', (harness) => {
    const sink = createS3Sink({ bucket: BUCKET, prefix: 'adopt', endpoint: minio.endpoint, credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey } });
    harness.onCleanup(() => sink.close());
    return sink;
  });
});
