/**
 * Worker affinity with two real worker processes (placements a and b), real
 * Redis and real Node targets: each capture runs on its placement's worker
 * (the record names it), a placement without a worker fails fast with
 * no_worker_for_target, and killing worker a fails a's running and queued
 * captures and leaves a without a live worker. Leak hunts connect to targets
 * too and follow the same placements.
 */
import { readdir } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { startRedis, tmpDir, waitFor, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { coversPlacement, type CaptureRecord, type LeakHuntRecord } from '@heapcap/state';
import { createHarness, type Harness, type TestTarget } from './helpers/harness.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';
import { sweepOrphanScratch } from '../src/temp-files.ts';

let redis: RedisServer;
let h: Harness | undefined;
const procs: WorkerProcess[] = [];
/**
 * The workers' TMPDIR (their hunts' scratch). Not the machine's: every worker
 * or serve that starts on this host sweeps a dead process's scratch from its
 * own, and the other test files running beside this one start many; one of
 * them removed the killed worker's hunt directory before this file looked.
 */
let scratch: TmpDir;

before(async () => {
  redis = await startRedis();
  scratch = await tmpDir('heapcap-placement-scratch');
});
afterEach(async () => {
  await Promise.allSettled(procs.splice(0).map((p) => p.kill('SIGKILL')));
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await redis?.stop();
  await scratch?.cleanup();
});

/** A Node target registered with `placement`. */
async function placedTarget(hh: Harness, id: string, placement: string, heapMb = 5): Promise<TestTarget> {
  const t = await hh.addTarget(id, heapMb);
  await hh.queue.targets.put({ id, kind: 'node', ws: t.proxy.url, labels: { service: 'test' }, placement });
  return t;
}

function capture(hh: Harness, targetId: string, force = false): Promise<CaptureRecord> {
  return hh.queue.requestCapture({ targetId, force, trigger: { kind: 'rest', who: 'oncall' } }).then((r) => r.record);
}

async function worker(hh: Harness, id: string, placements: string, heartbeatMs?: number): Promise<WorkerProcess> {
  const heartbeat: Record<string, string> = heartbeatMs === undefined ? {} : { HEAPCAP_TEST_HEARTBEAT_MS: String(heartbeatMs) };
  const p = await startWorkerProcess(hh, { HEAPCAP_TEST_PLACEMENTS: placements, HEAPCAP_TEST_WORKER_ID: id, TMPDIR: scratch.path, ...heartbeat });
  procs.push(p);
  return p;
}

void test('placements a and b: each capture runs on its own worker; no worker → no_worker_for_target; kill a → a fails fast', async () => {
  h = await createHarness(redis.url);
  const hh = h;
  const ta = await placedTarget(hh, 'on-a', 'a', 30);
  const tb = await placedTarget(hh, 'on-b', 'b');
  await placedTarget(hh, 'on-c', 'c');
  const a = await worker(hh, 'worker-a', 'a');
  await worker(hh, 'worker-b', 'b');

  const live = await hh.queue.workers.list();
  assert.deepEqual(
    live.map((w) => [w.id, w.placements, w.inFlight]),
    [
      ['worker-a', ['a'], 0],
      ['worker-b', ['b'], 0],
    ],
  );
  assert.ok(live.every((w) => w.version.length > 0 && w.pid > 0));

  for (let i = 0; i < 2; i++) {
    for (const [target, expected] of [['on-a', 'worker-a'], ['on-b', 'worker-b']] as const) {
      const queued = await capture(hh, target);
      const done = await hh.queue.waitForCapture(queued.id, 60_000);
      assert.equal(done?.status, 'succeeded', JSON.stringify(done?.error));
      assert.equal(done?.worker, expected, `${target} ran on its placement's worker`);
    }
  }
  assert.equal(ta.proxy.snapshotsCompleted(), 2);
  assert.equal(tb.proxy.snapshotsCompleted(), 2);

  // Nobody consumes c: the capture is failed when it is requested, not left queued.
  const t0 = Date.now();
  const orphan = await capture(hh, 'on-c');
  assert.equal(orphan.status, 'failed');
  assert.equal(orphan.error?.code, 'no_worker_for_target');
  assert.match(orphan.error?.hint ?? '', /HEAPCAP_WORKER_PLACEMENTS=c/);
  assert.ok(Date.now() - t0 < 3_000);
  assert.equal((await hh.queue.getCapture(orphan.id))?.status, 'failed');

  // One running on a, one queued behind it (worker a runs one at a time); then a dies.
  const running = await capture(hh, 'on-a');
  await waitFor(async () => (await hh.queue.getCapture(running.id))?.phase === 'serialize' || undefined, { timeoutMs: 60_000, intervalMs: 20, what: 'the capture on a to serialize' });
  const queued = await capture(hh, 'on-a', true);
  assert.equal((await hh.queue.getCapture(queued.id))?.status, 'queued');
  await a.kill('SIGKILL');
  const killedAt = Date.now();
  // Worker b's heartbeat sweep fails a's captures once a's heartbeat expires (3 × 500 ms).
  for (const id of [running.id, queued.id]) {
    const r = await waitFor(async () => {
      const rec = await hh.queue.getCapture(id);
      return rec?.status === 'failed' ? rec : undefined;
    }, { timeoutMs: 15_000, intervalMs: 50, what: `capture ${id} of dead worker a to fail` });
    assert.equal(r.error?.code, 'no_worker_for_target');
  }
  assert.ok(Date.now() - killedAt < 10_000, `failed ${Date.now() - killedAt} ms after the kill`);
  const after = await hh.queue.workers.list();
  assert.deepEqual(after.map((w) => w.id), ['worker-b']);
  assert.ok(!after.some((w) => coversPlacement(w.placements, 'a')), 'a has no live worker');
  const late = await capture(hh, 'on-a');
  assert.equal(late.error?.code, 'no_worker_for_target');
  // b still works.
  const onB = await hh.queue.waitForCapture((await capture(hh, 'on-b')).id, 60_000);
  assert.equal(onB?.worker, 'worker-b');
});

void test('a * worker takes placed targets too, and unplaced targets run on placement-limited workers', async () => {
  h = await createHarness(redis.url);
  const hh = h;
  await placedTarget(hh, 'on-z', 'z');
  await hh.addTarget('anywhere', 5);
  await worker(hh, 'worker-q', 'q');
  const any = await hh.queue.waitForCapture((await capture(hh, 'anywhere')).id, 60_000);
  assert.equal(any?.status, 'succeeded', JSON.stringify(any?.error));
  assert.equal(any?.worker, 'worker-q');
  const star = await hh.startWorker();
  assert.deepEqual(star.placements, ['*']);
  const z = await hh.queue.waitForCapture((await capture(hh, 'on-z')).id, 60_000);
  assert.equal(z?.status, 'succeeded', JSON.stringify(z?.error));
  assert.equal(z?.worker, star.id);
});

/** The hunt tests' worker heartbeat (ms). */
const HUNT_HEARTBEAT_MS = 2_000;

function hunt(hh: Harness, targetId: string, intervalMs = 200): Promise<LeakHuntRecord> {
  return hh.queue.leakHunts.create({ targetId, intervalMs, requestedBy: 'oncall' });
}

function huntEnded(hh: Harness, id: string, timeoutMs = 60_000): Promise<LeakHuntRecord> {
  return waitFor(async () => {
    const r = await hh.queue.leakHunts.get(id);
    return r?.status === 'succeeded' || r?.status === 'failed' ? r : undefined;
  }, { timeoutMs, intervalMs: 50, what: `leak hunt ${id} to end` });
}

void test('leak hunts follow the placement: only its worker connects; none → no_worker_for_target; its worker dies → the hunt fails', async () => {
  h = await createHarness(redis.url);
  const hh = h;
  const ta = await placedTarget(hh, 'on-a', 'a');
  // A hunt's report is synchronous CPU in its worker (docs/architecture.md): with FAST_TUNING's 500 ms heartbeat
  // (expired after 1.5 s) a loaded CI machine once stalled worker a long enough for b's sweep to fail a's hunt
  // as orphaned. These workers beat every 2 s (expired after 6 s), still far below the default 5 s (15 s).
  await worker(hh, 'worker-b', 'b', HUNT_HEARTBEAT_MS);

  // Only b lives. b consumes the unplaced hunts, never a's: the hunt fails at once and nobody connects to the target.
  const t0 = Date.now();
  const orphan = await hunt(hh, 'on-a');
  assert.equal(orphan.status, 'failed');
  assert.equal(orphan.placement, 'a');
  assert.equal(orphan.error?.code, 'no_worker_for_target');
  assert.match(orphan.error?.hint ?? '', /HEAPCAP_WORKER_PLACEMENTS=a/);
  assert.ok(Date.now() - t0 < 3_000);
  assert.equal((await hh.queue.leakHunts.get(orphan.id))?.status, 'failed');

  const a = await worker(hh, 'worker-a', 'a', HUNT_HEARTBEAT_MS);
  for (let i = 0; i < 2; i++) {
    const done = await huntEnded(hh, (await hunt(hh, 'on-a')).id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.worker, 'worker-a', "the hunt ran on its placement's worker");
    assert.deepEqual(done.snapshots.map((s) => s.name), ['baseline', 'target', 'final']);
  }
  assert.equal(ta.proxy.snapshotsCompleted(), 6, 'every snapshot went through the target, none failed');

  // Worker a dies while its hunt waits between snapshots: b's heartbeat sweep fails the hunt.
  const waiting = await hunt(hh, 'on-a', 120_000);
  await waitFor(async () => (await hh.queue.leakHunts.get(waiting.id))?.phase === 'wait' || undefined, { timeoutMs: 60_000, intervalMs: 20, what: 'the hunt on a to wait between snapshots' });
  await a.kill('SIGKILL');
  const killedAt = Date.now();
  const failed = await huntEnded(hh, waiting.id, 25_000);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error?.code, 'no_worker_for_target');
  // Expiry (3 heartbeats) plus b's next sweep (one heartbeat): 8 s; the rest is room for a loaded machine.
  assert.ok(Date.now() - killedAt < 4 * HUNT_HEARTBEAT_MS + 7_000, `failed ${Date.now() - killedAt} ms after the kill`);
  // A SIGKILL skips every finally: the hunt's directory (its baseline snapshot) is left, named for the dead
  // worker, and the next worker starting on this host removes it (startWorkerPart → sweepOrphanScratch).
  const leftBehind = async (): Promise<string[]> => (await readdir(scratch.path)).filter((n) => n.startsWith(`heapcap-hunt-${waiting.id}-`));
  const left = await leftBehind();
  assert.equal(left.length, 1, 'the killed worker left its hunt directory');
  assert.deepEqual(await sweepOrphanScratch(scratch.path).then((r) => r.filter((n) => left.includes(n))), left);
  assert.deepEqual(await leftBehind(), []);
});

void test('a * worker runs the hunts of placed targets too', async () => {
  h = await createHarness(redis.url);
  const hh = h;
  await placedTarget(hh, 'on-z', 'z');
  await worker(hh, 'worker-q', 'q', HUNT_HEARTBEAT_MS);
  // In its own process, like the others: a hunt's report is synchronous CPU, and in this
  // process it would also hold the target's proxy and the test's own timers.
  await worker(hh, 'worker-star', '*', HUNT_HEARTBEAT_MS);
  const done = await huntEnded(hh, (await hunt(hh, 'on-z')).id);
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  assert.equal(done.worker, 'worker-star');
});
