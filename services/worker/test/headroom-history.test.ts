import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { PREVIOUS_CAPTURE_SAFETY } from '@heapcap/capture';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';

let redis: RedisServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await redis?.stop();
});

interface ManifestEstimate {
  estimate: { heapUsedBytes: number; extraBytes: number; source?: string; modelBytes?: number; previousBytes?: number | null };
  peak: { actualExtraBytes: number | null };
}

async function captureOnce(harness: Harness, targetId: string): Promise<ManifestEstimate> {
  const { record } = await harness.queue.requestCapture({ targetId, trigger: { kind: 'rest', who: 'oncall' } });
  const final = await harness.queue.waitForCapture(record.id, 120_000);
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  const key = final?.artifact?.manifestKey;
  assert.ok(key !== undefined);
  return JSON.parse(await readFile(join(harness.storeDir.path, key), 'utf8')) as ManifestEstimate;
}

void test('the worker records what a capture cost the target, and the next capture is estimated from it', async () => {
  h = await createHarness(redis.url);
  const t = await h.addTarget('app', 5);
  await h.startWorker();
  assert.equal(await h.queue.headroom.get('app'), null);

  const first = await captureOnce(h, 'app');
  assert.equal(first.estimate.source, 'model');
  assert.equal(first.estimate.previousBytes, null);
  // A fresh process: the snapshot raised its peak RSS, so the cost was measured and recorded.
  assert.ok(first.peak.actualExtraBytes !== null && first.peak.actualExtraBytes > 0, JSON.stringify(first.peak));
  const recorded = await h.queue.headroom.get('app');
  assert.deepEqual(
    { heapUsedBytes: recorded?.heapUsedBytes, extraBytes: recorded?.extraBytes, pid: recorded?.pid },
    { heapUsedBytes: first.estimate.heapUsedBytes, extraBytes: first.peak.actualExtraBytes, pid: t.node.pid },
  );

  const second = await captureOnce(h, 'app');
  assert.equal(second.estimate.source, 'previous capture');
  const expected = Math.round((PREVIOUS_CAPTURE_SAFETY * first.peak.actualExtraBytes * second.estimate.heapUsedBytes) / first.estimate.heapUsedBytes);
  assert.equal(second.estimate.previousBytes, expected);
  assert.equal(second.estimate.extraBytes, expected);
  assert.equal(typeof second.estimate.modelBytes, 'number');
  // The second snapshot of a process reuses the first one's memory: it cannot lower the record.
  const kept = await h.queue.headroom.get('app');
  assert.ok(kept !== null && kept.extraBytes / kept.heapUsedBytes >= (recorded!.extraBytes / recorded!.heapUsedBytes));
});

void test('the record: the same process only raises it, a new process replaces it, nothing measured changes nothing', async () => {
  h = await createHarness(redis.url);
  const at = new Date().toISOString();
  const MiB = 1024 * 1024;
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 20 * MiB, extraBytes: 360 * MiB, pid: 100, capturedAt: at }), true);
  // Same pid, cheaper per heap byte (a second snapshot of one process): kept as it was.
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 20 * MiB, extraBytes: 100 * MiB, pid: 100, capturedAt: at }), false);
  assert.equal((await h.queue.headroom.get('x'))?.extraBytes, 360 * MiB);
  // Same pid, dearer: raised.
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 20 * MiB, extraBytes: 400 * MiB, pid: 100, capturedAt: at }), true);
  // A new process (restart): replaces it, even when cheaper (its heap changed shape).
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 40 * MiB, extraBytes: 20 * MiB, pid: 200, capturedAt: at }), true);
  assert.deepEqual(await h.queue.headroom.get('x'), { heapUsedBytes: 40 * MiB, extraBytes: 20 * MiB, pid: 200, capturedAt: at });
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 0, extraBytes: 20 * MiB, pid: 300, capturedAt: at }), false);
  assert.equal(await h.queue.headroom.record('x', { heapUsedBytes: 40 * MiB, extraBytes: 0, pid: 300, capturedAt: at }), false);
  // A record that does not parse reads as none (the model decides).
  await h.queue.redis.hset(h.queue.keys.headroom('y'), { heapUsedBytes: 'lots' });
  assert.equal(await h.queue.headroom.get('y'), null);
});
