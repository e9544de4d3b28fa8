import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import type { CaptureRecord } from '@heapcap/state';
import { createHarness, type Harness } from './helpers/harness.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';

let redis: RedisServer;
let h: Harness | undefined;
const procs: WorkerProcess[] = [];

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await Promise.allSettled(procs.splice(0).map((p) => p.kill('SIGKILL')));
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await redis?.stop();
});

/** Poll the record until `pred` holds. */
function recordWhere(hh: Harness, id: string, pred: (r: CaptureRecord) => boolean, what: string, timeoutMs = 60_000): Promise<CaptureRecord> {
  return waitFor(async () => {
    const r = await hh.queue.getCapture(id);
    return r !== null && pred(r) ? r : undefined;
  }, { timeoutMs, intervalMs: 20, what });
}

void test('worker SIGKILLed mid-capture: another worker completes it once after the lease expires, 2 attempts, no partial files', async () => {
  h = await createHarness(redis.url);
  const t = await h.addTarget('victim', 20);
  const a = await startWorkerProcess(h);
  procs.push(a);
  const { record } = await h.queue.requestCapture({ targetId: 'victim', trigger: { kind: 'rest', who: 'oncall' } });
  // Serializing: chunks are flowing into the sink's temp file.
  await recordWhere(h, record.id, (r) => r.phase === 'serialize', 'the capture to reach serialize');
  await waitFor(async () => (await h!.storedFiles()).some((f) => f.endsWith('.tmp')), { timeoutMs: 10_000, what: 'a temp file' });
  await a.kill('SIGKILL');
  const killedAt = Date.now();
  assert.equal((await h.queue.getCapture(record.id))?.status, 'running', 'the dead worker left it running');
  await h.startWorker();
  const final = await h.queue.waitForCapture(record.id, 120_000);
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  assert.equal(final?.attempts, 2);
  // Not before the dead worker's target lease (3 s) ran out.
  assert.ok(Date.parse(final!.startedAt!) - killedAt >= 2_000, `second attempt started ${Date.parse(final!.startedAt!) - killedAt} ms after the kill`);
  assert.deepEqual(await h.storedFiles(), [final!.artifact!.key, final!.artifact!.manifestKey, final!.artifact!.summaryKey].sort(), 'exactly one snapshot, its manifest and its summary');
  assert.equal(t.proxy.snapshotCalls(), 2, 'one abandoned, one complete');
  assert.equal(t.proxy.snapshotsCompleted(), 1);
  assert.equal(t.proxy.maxInFlight(), 1);
  // BullMQ saw a stall (not a failure): attemptsMade counts the one run that finished.
  // BullMQ completes the job just after the record says succeeded: read it once it has.
  await waitFor(async () => (await h!.queue.bull.getJobState(record.id)) === 'completed', { timeoutMs: 10_000, what: 'the job to be completed' });
  const job = await h.queue.bull.getJob(record.id);
  assert.equal(job?.stalledCounter, 1);
  assert.equal(job?.attemptsMade, 1);
});

void test('cancel a running capture: record cancelled, no artifact, target released and alive, next capture succeeds', async () => {
  h = await createHarness(redis.url);
  const t = await h.addTarget('slow', 20);
  await h.startWorker();
  const { record } = await h.queue.requestCapture({ targetId: 'slow', trigger: { kind: 'rest', who: 'oncall' } });
  await recordWhere(h, record.id, (r) => r.phase === 'generate', 'the capture to reach generate');
  const res = await h.queue.cancelCapture(record.id);
  assert.equal(res.outcome, 'cancelling');
  const final = await h.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'cancelled');
  assert.equal(final?.error?.code, 'cancelled');
  assert.equal(final?.artifact, null);
  // The target's main thread is free now: the abandoned snapshot is not still running in it.
  const t0 = performance.now();
  assert.equal(await t.node.request('ping', 'ERR ping', 5_000), 'ERR ping');
  const replyMs = performance.now() - t0;
  assert.ok(replyMs < 500, `target answered its stdin after ${replyMs.toFixed(0)} ms (still snapshotting?)`);
  assert.equal(await h.queue.locks.holder('slow'), null, 'lock released');
  assert.deepEqual(await h.storedFiles(), [], 'no artifact, no temp file');
  const next = await h.queue.requestCapture({ targetId: 'slow', trigger: { kind: 'rest', who: 'oncall' } });
  assert.equal(next.created, true);
  const done = await h.queue.waitForCapture(next.record.id, 60_000);
  assert.equal(done?.status, 'succeeded', JSON.stringify(done?.error));
  assert.equal(done?.timings?.['queued'] !== undefined && done.timings['queued'] < 2_000, true, 'started at once');
  assert.equal(t.node.child.exitCode, null, 'target alive');
  assert.equal(t.proxy.maxInFlight(), 1);
  assert.equal((await h.queue.bull.getJob(record.id))?.attemptsMade, 1, 'the cancelled job was not retried');
});

void test('SIGTERM-style close: a running capture is handed back within the limit and finished by another worker', async () => {
  h = await createHarness(redis.url);
  await h.addTarget('long', 20);
  const w1 = await h.startWorker({ shutdownTimeoutMs: 300 });
  const { record } = await h.queue.requestCapture({ targetId: 'long', trigger: { kind: 'rest', who: 'oncall' } });
  await recordWhere(h, record.id, (r) => r.phase === 'generate', 'the capture to reach generate');
  const t0 = Date.now();
  const closing = w1.close();
  assert.equal(w1.close(), closing, 'close() is idempotent');
  await closing;
  const took = Date.now() - t0;
  assert.ok(took < 300 + 5_000 + 2_000, `close took ${took} ms`);
  assert.equal(w1.state, 'closed');
  const handed = await h.queue.getCapture(record.id);
  assert.equal(handed?.status, 'queued');
  assert.equal(handed?.error, null);
  await h.startWorker();
  const final = await h.queue.waitForCapture(record.id, 60_000);
  assert.equal(final?.status, 'succeeded', JSON.stringify(final?.error));
  assert.equal(final?.attempts, 2);
});
