/**
 * How an attempt ends when the target or Redis stops answering:
 * - a protocol timeout leaves the target busy (here: frozen mid-snapshot), so
 *   the worker keeps the target lock until it answers again, and records that;
 * - Redis frozen while an attempt finishes: the attempt still ends in exactly
 *   one outcome log line, and its outcome reaches the record once Redis is back.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLogger } from '@heapcap/service';
import { jsonLogSink, startPersistentRedis, waitFor, type PersistentRedis } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';

let redis: PersistentRedis;
const harnesses: Harness[] = [];
before(async () => {
  redis = await startPersistentRedis();
});
after(async () => {
  redis?.resume();
  await Promise.allSettled(harnesses.map((h) => h.cleanup()));
  await redis?.destroy();
});


void test('protocol timeout on a frozen target: the lock is held until it answers again, and the record says so', async () => {
  const h = await createHarness(redis.url);
  harnesses.push(h);
  const t = await h.addTarget('frozen', 40);
  // Registered by its inspector port, not through the proxy: the worker itself must tell a frozen
  // process (the HTTP request to /json/list never answered) from a gone one.
  await h.queue.targets.put({ id: 'frozen', kind: 'node', inspect: `127.0.0.1:${t.node.port}` });
  await h.startWorker({ concurrency: 1, snapshotTimeoutMs: 3_000, settleTimeoutMs: 120_000 });
  const { record } = await h.queue.requestCapture({ targetId: 'frozen', trigger: { kind: 'rest', who: 'oncall' } });
  await waitFor(async () => (await h.queue.getCapture(record.id))?.phase === 'generate', { timeoutMs: 60_000, intervalMs: 20, what: 'the snapshot to start' });
  process.kill(t.node.pid, 'SIGSTOP');
  try {
    // The snapshot deadline passes; the worker now waits for the target instead of letting go.
    await waitFor(async () => (await h.queue.getCapture(record.id))?.phase === 'settle', { timeoutMs: 30_000, what: 'the worker to wait for the target' });
    assert.notEqual(await h.queue.locks.holder('frozen'), null);
    // Longer than one connection attempt to the frozen inspector (5 s) and than the engine's
    // connect deadline (10 s): a worker that took "no answer" for "gone" would have let go by now.
    const heldUntil = Date.now() + 15_000;
    while (Date.now() < heldUntil) {
      assert.notEqual(await h.queue.locks.holder('frozen'), null, 'the lock was released while the target was frozen');
      assert.equal((await h.queue.getCapture(record.id))?.status, 'running');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    process.kill(t.node.pid, 'SIGCONT');
  }
  const final = await h.queue.waitForCapture(record.id, 120_000);
  assert.equal(final?.status, 'failed');
  assert.equal(final?.error?.code, 'protocol_timeout');
  assert.equal(final?.error?.phase, 'generate');
  assert.equal(final?.error?.settle?.outcome, 'idle');
  assert.ok((final?.error?.settle?.waitedMs ?? 0) >= 15_000, JSON.stringify(final?.error));
  await waitFor(async () => (await h.queue.locks.holder('frozen')) === null, { timeoutMs: 10_000, what: 'the lock to be released' });
});

void test('Redis frozen while an attempt finishes: exactly one outcome line, and the outcome is recorded once Redis is back', async () => {
  const logs = jsonLogSink();
  // Short Redis deadlines, so every write during the freeze times out; long leases, so nothing else is lost meanwhile.
  const h = await createHarness(redis.url, { redisTimeoutMs: 1_000 }, createLogger('info', { service: 'worker', destination: logs.stream }));
  harnesses.push(h);
  await h.addTarget('steady', 20);
  await h.startWorker({ concurrency: 1, lockDurationMs: 120_000, targetLeaseMs: 120_000, recordRetryMs: 60_000 });
  const { record } = await h.queue.requestCapture({ targetId: 'steady', trigger: { kind: 'rest', who: 'oncall' } });
  await waitFor(async () => (await h.queue.getCapture(record.id))?.phase === 'generate', { timeoutMs: 60_000, intervalMs: 20, what: 'the snapshot to start' });
  redis.pause();
  try {
    // The capture itself needs no Redis: it completes into the store (manifest last) while Redis is frozen.
    await waitFor(async () => (await h.storedFiles()).some((f) => f.endsWith(`${record.id}.manifest.json`)), { timeoutMs: 60_000, what: 'the manifest in the store' });
    // Its outcome write is now timing out against the frozen Redis.
    await waitFor(() => logs.lines().some((l) => l['captureId'] === record.id && l['msg'] === 'could not record the phase'), { timeoutMs: 30_000, what: 'a record write to time out' });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  } finally {
    redis.resume();
  }
  const final = await h.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'succeeded');
  const outcomes = (): Record<string, unknown>[] => logs.lines().filter((l) => l['captureId'] === record.id && typeof l['outcome'] === 'string');
  await waitFor(() => outcomes().length >= 1, { timeoutMs: 60_000, what: 'the outcome line' });
  const lines = outcomes();
  assert.equal(lines.length, 1, JSON.stringify(lines));
  assert.equal(lines[0]?.['outcome'], 'succeeded');
  assert.equal(lines[0]?.['recorded'], true);
  assert.equal(lines[0]?.['attempt'], 1);
});
