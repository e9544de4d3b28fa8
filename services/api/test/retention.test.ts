/**
 * Retention end to end (API + capture worker + schedule worker with its
 * janitor, real Redis, real Node target): a schedule with keepLast 3 leaves
 * artifacts for only its 3 newest captures, in a directory and in MinIO; a
 * pinned older one survives; expired records say so. With MinIO stopped the
 * janitor's deletion fails, and it succeeds on a later run once MinIO is back.
 */
import assert from 'node:assert/strict';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { after, afterEach, before, describe, test } from 'node:test';
import { createS3Sink, type ArtifactStore } from '@heapcap/storage';
import type { CaptureRecord } from '@heapcap/state';
import { startMinio, startRedis, waitFor, type MinioServer, type RedisServer } from '@heapcap/testkit';
import { auth, startHarness, type Harness } from './harness.ts';
import { scheduleCaptures, settled } from './schedule-helpers.ts';

const FAST = { HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s', HEAPCAP_RETENTION_INTERVAL: '1s' };
const BUCKET = 'heapcap-retention';

let redis: RedisServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await h?.close();
  h = undefined;
});
after(async () => {
  await redis?.stop();
});

/** The stored objects of capture `id` (names without their directory), sorted. */
type ObjectsOf = (id: string) => Promise<string[]>;

/**
 * Six captures of a keepLast-3 schedule, the first pinned; the janitor
 * converges on: pinned + newest 3 keep their objects, the rest are expired.
 * Returns the captures (oldest first) and which one is pinned.
 */
async function keepLastThree(harness: Harness, objectsOf: ObjectsOf): Promise<{ all: CaptureRecord[]; pinned: CaptureRecord }> {
  const q = harness.queue;
  await harness.world.addTarget('app', 2);
  const res = await harness.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'keep3', target: 'app', every: '2s', retention: { keepLast: 3 } } });
  assert.equal(res.statusCode, 201, res.body);
  assert.deepEqual(res.json<{ retention: unknown }>().retention, { keepLast: 3, maxAgeDays: 30 });

  const first = await waitFor(async () => (await scheduleCaptures(q, 'keep3')).find((r) => r.status === 'succeeded'), { timeoutMs: 60_000, intervalMs: 200, what: 'the first capture' });
  const pin = await harness.app.inject({ method: 'POST', url: `/v1/captures/${first.id}/pin`, headers: auth('runbook'), payload: { reason: 'baseline before the deploy' } });
  assert.equal(pin.statusCode, 200, pin.body);
  assert.equal(pin.json<{ capture: CaptureRecord }>().capture.pinned?.by, 'runbook');

  await waitFor(async () => (await scheduleCaptures(q, 'keep3')).filter((r) => r.status === 'succeeded' || r.status === 'expired').length >= 6, {
    timeoutMs: 90_000,
    intervalMs: 250,
    what: 'six captures',
  });
  assert.equal((await harness.app.inject({ method: 'POST', url: '/v1/schedules/keep3/pause', headers: auth('runbook') })).statusCode, 200);
  await settled(q, 'keep3');

  // The janitor (every 1 s) converges: pinned + the newest 3 keep their artifacts, every other one is expired.
  const all = await waitFor(
    async () => {
      const now = (await scheduleCaptures(q, 'keep3')).filter((r) => r.status === 'succeeded' || r.status === 'expired');
      const unpinned = now.filter((r) => r.id !== first.id);
      const newest = new Set(unpinned.slice(-3).map((r) => r.id));
      const done = now.every((r) => (r.id === first.id || newest.has(r.id) ? r.status === 'succeeded' : r.status === 'expired'));
      return done ? now : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: 'retention to keep only the pinned and newest 3' },
  );
  assert.ok(all.length >= 6);
  const kept = new Set([first.id, ...all.filter((r) => r.id !== first.id).slice(-3).map((r) => r.id)]);
  const audits = await q.audit.recent(1000);
  for (const r of all) {
    const objects = await objectsOf(r.id);
    if (kept.has(r.id)) {
      assert.deepEqual(objects, [`${r.id}.heapsnapshot.gz`, `${r.id}.manifest.json`, `${r.id}.summary.json`], `${r.id} keeps its snapshot, manifest and summary`);
      continue;
    }
    assert.deepEqual(objects, [], `${r.id}: its objects are gone`);
    const got = await harness.app.inject({ method: 'GET', url: `/v1/captures/${r.id}`, headers: auth('reader') });
    const rec = got.json<{ capture: CaptureRecord }>().capture;
    assert.equal(rec.status, 'expired');
    assert.equal(rec.artifact, null);
    assert.deepEqual({ by: rec.expired?.by, reason: rec.expired?.reason, scheduleId: rec.expired?.scheduleId }, { by: 'retention', reason: 'keepLast', scheduleId: 'keep3' });
    assert.equal(rec.trigger.kind, 'schedule', 'the record keeps who asked and why');
    assert.ok(audits.some((a) => a.action === 'capture.expire' && a.captureId === r.id));
    const download = await harness.app.inject({ method: 'GET', url: `/v1/captures/${r.id}/artifact`, headers: auth('runbook') });
    assert.equal(download.statusCode, 409);
    assert.equal(download.json<{ error: { code: string } }>().error.code, 'artifact_not_available');
    const repin = await harness.app.inject({ method: 'POST', url: `/v1/captures/${r.id}/pin`, headers: auth('runbook') });
    assert.equal(repin.statusCode, 409, 'an expired capture cannot be pinned');
  }
  const metrics = (await harness.app.inject({ method: 'GET', url: '/metrics' })).body;
  assert.equal(Number(/^heapcap_retention_deleted_total (\d+)$/m.exec(metrics)?.[1]), all.length - 4, metrics);
  const pinned = all.find((r) => r.id === first.id)!;
  assert.equal(pinned.pinned?.reason, 'baseline before the deploy');
  return { all, pinned };
}

void test('filesystem: keepLast 3 keeps the newest 3 and the pinned one', async () => {
  h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 2 }, schedules: {} });
  const world = h.world;
  await keepLastThree(h, async (id) => (await world.storedFiles()).filter((f) => f.includes(id)).map((f) => f.slice(f.lastIndexOf('/') + 1)).sort());
});

void describe('MinIO', () => {
  let minio: MinioServer;
  let sink: ArtifactStore;
  before(async () => {
    minio = await startMinio();
    await minio.createBucket(BUCKET);
    sink = createS3Sink({
      bucket: BUCKET,
      prefix: 'captures',
      endpoint: minio.endpoint,
      credentials: { accessKeyId: minio.accessKey, secretAccessKey: minio.secretKey },
      // A stopped MinIO fails a deletion within seconds instead of the default minute of retries.
      retry: { budgetMs: 2_000, checkBudgetMs: 2_000 },
      timeouts: { connectMs: 500, idleMs: 2_000 },
    });
  });
  after(async () => {
    await sink?.close();
    await minio?.stop();
  });

  const objectsOf: ObjectsOf = async (id) => {
    const out = await minio.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'captures/app/' }));
    return (out.Contents ?? []).map((o) => o.Key ?? '').filter((k) => k.includes(id)).map((k) => k.slice(k.lastIndexOf('/') + 1)).sort();
  };

  void test('keepLast 3 in MinIO; a deletion refused while MinIO is stopped is retried and succeeds once it is back', async () => {
    h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 2 }, schedules: {}, sink });
    const q = h.queue;
    const { pinned } = await keepLastThree(h, objectsOf);

    // MinIO stops; the pinned capture is unpinned, so retention now wants it gone.
    await minio.kill();
    const unpin = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${pinned.id}/pin`, headers: auth('runbook') });
    assert.equal(unpin.statusCode, 200, unpin.body);
    assert.equal(unpin.json<{ capture: CaptureRecord }>().capture.pinned, null);
    await waitFor(async () => (await q.scheduleMetrics()).retention.failures >= 2, { timeoutMs: 60_000, intervalMs: 250, what: 'two failed deletions (two janitor runs)' });
    const meanwhile = await q.getCapture(pinned.id);
    assert.equal(meanwhile?.status, 'succeeded', 'not expired while its objects may remain');
    assert.notEqual(meanwhile?.artifact, null);
    assert.ok(h.logs.lines.some((l) => l.includes('could not delete the artifact') && l.includes(pinned.id)), 'the failure is logged');

    await minio.restart();
    const done = await waitFor(async () => {
      const r = await q.getCapture(pinned.id);
      return r?.status === 'expired' ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250, what: 'the retried deletion to succeed' });
    assert.equal(done.expired?.reason, 'keepLast');
    assert.deepEqual(await objectsOf(pinned.id), []);
    assert.deepEqual(await q.redis.zrange(q.keys.retentionPending(), 0, -1), [], 'nothing left pending');
    const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.ok(Number(/^heapcap_retention_failures_total (\d+)$/m.exec(metrics)?.[1]) >= 2, metrics);
  });
});
