import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { UnrecoverableError, Worker } from 'bullmq';
import { CAPTURE_QUEUE, duplicateRedis, isQueueError, PHASE_BUCKETS_SECONDS, reconcileCaptures, type HeapcapQueue } from '../src/index.ts';
import { freshQueue, nodeTarget, restTrigger } from './helpers.ts';

let redis: RedisServer;
const queues: HeapcapQueue[] = [];
const open = (): HeapcapQueue => {
  const q = freshQueue(redis.url);
  queues.push(q);
  return q;
};

before(async () => {
  redis = await startRedis();
});
after(async () => {
  await Promise.allSettled(queues.map((q) => q.close()));
  await redis?.stop();
});

const artifact = { key: 'k', manifestKey: 'm', location: '/x', bytesUncompressed: 10, bytesStored: 5, sha256: 'ab', gzip: true };

void test('attempts: start counts, phases need the current attempt, terminal is final', async () => {
  const q = open();
  await q.targets.put(nodeTarget('a'));
  const { record } = await q.requestCapture({ targetId: 'a', trigger: restTrigger() });
  const s1 = await q.attempts.start(record.id, 'a');
  assert.deepEqual(s1, { ok: true, status: 'running', attempts: 1 });
  // A second start (the job was picked up again after a stall) is attempt 2; attempt 1's writes are refused.
  const s2 = await q.attempts.start(record.id, 'a');
  assert.equal(s2.attempts, 2);
  const stale = await q.attempts.phase(record.id, 'a', 1, 'generate');
  assert.deepEqual(stale, { ok: false, reason: 'stale', status: 'running', attempts: 2 });
  assert.equal((await q.attempts.phase(record.id, 'a', 2, 'generate')).ok, true);
  assert.equal((await q.getCapture(record.id))?.phase, 'generate');
  const done = await q.attempts.succeed(record.id, 'a', 2, { total: 12, connect: 1 }, artifact);
  assert.equal(done.ok, true);
  // Nothing overwrites a terminal status, not even without fencing.
  const late = await q.attempts.fail(record.id, 'a', 2, { code: 'target_closed', message: 'x' }, null, false);
  assert.deepEqual(late, { ok: false, reason: 'terminal', status: 'succeeded', attempts: 2 });
  assert.equal((await q.attempts.abandon(record.id, 'a', { code: 'internal', message: 'x' })).ok, false);
  assert.equal((await q.cancelCapture(record.id)).outcome, 'finished');
  const final = await q.getCapture(record.id);
  assert.equal(final?.status, 'succeeded');
  assert.deepEqual(final?.artifact, artifact);
  assert.deepEqual(final?.timings, { total: 12, connect: 1 });
  assert.equal(final?.attempts, 2);
  assert.ok(final?.finishedAt !== null && final?.startedAt !== null);
  // The status indexes moved with it.
  assert.deepEqual((await q.depth()).records, { queued: 0, running: 0, succeeded: 1, failed: 0, cancelled: 0, expired: 0 });
});

void test('a retriable failure goes back to queued with its error; the final one fails', async () => {
  const q = open();
  await q.targets.put(nodeTarget('b'));
  const { record } = await q.requestCapture({ targetId: 'b', trigger: restTrigger() });
  await q.attempts.start(record.id, 'b');
  await q.attempts.fail(record.id, 'b', 1, { code: 'target_unreachable', message: 'refused', phase: 'connect' }, { connect: 3, total: 3 }, true);
  let r = await q.getCapture(record.id);
  assert.equal(r?.status, 'queued');
  assert.equal(r?.error?.code, 'target_unreachable');
  // Still joinable while it waits for its retry.
  assert.equal((await q.requestCapture({ targetId: 'b', trigger: restTrigger() })).coalesced, true);
  await q.attempts.start(record.id, 'b');
  await q.attempts.fail(record.id, 'b', 2, { code: 'target_unreachable', message: 'refused', phase: 'connect' }, null, false);
  r = await q.getCapture(record.id);
  assert.equal(r?.status, 'failed');
  assert.equal(r?.phase, 'connect');
  assert.equal(r?.attempts, 2);
});

void test('cancel: queued is cancelled at once and its job removed; running is flagged and announced', async () => {
  const q = open();
  await q.targets.put(nodeTarget('c'));
  await q.targets.put(nodeTarget('d'));
  const queued = await q.requestCapture({ targetId: 'c', trigger: restTrigger() });
  const res = await q.cancelCapture(queued.record.id);
  assert.equal(res.outcome, 'cancelled');
  assert.equal(res.record?.status, 'cancelled');
  assert.equal(res.record?.error?.code, 'cancelled');
  assert.equal(await q.bull.getJob(queued.record.id), undefined);

  await q.events.ready();
  const heard: string[] = [];
  const off = q.events.onCancel((id) => heard.push(id));
  const running = await q.requestCapture({ targetId: 'd', trigger: restTrigger() });
  await q.attempts.start(running.record.id, 'd');
  assert.equal(await q.attempts.cancelRequested(running.record.id), false);
  const res2 = await q.cancelCapture(running.record.id);
  assert.equal(res2.outcome, 'cancelling');
  assert.equal(res2.record?.status, 'running');
  assert.equal(await q.attempts.cancelRequested(running.record.id), true);
  const deadline = Date.now() + 5_000;
  while (heard.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  off();
  assert.deepEqual(heard, [running.record.id]);
  assert.equal((await q.attempts.cancelled(running.record.id, 'd', 1, 'generate', null)).ok, true);
  assert.equal((await q.getCapture(running.record.id))?.status, 'cancelled');
  assert.equal((await q.cancelCapture('nope')).outcome, 'not_found');
});

void test('waitForCapture returns when the capture ends, or the current record at the deadline', async () => {
  const q = open();
  await q.targets.put(nodeTarget('w'));
  const { record } = await q.requestCapture({ targetId: 'w', trigger: restTrigger() });
  const t0 = Date.now();
  const early = await q.waitForCapture(record.id, 300);
  assert.equal(early?.status, 'queued');
  assert.ok(Date.now() - t0 >= 290, 'waited until the deadline');
  await q.attempts.start(record.id, 'w');
  const waiting = q.waitForCapture(record.id, 20_000);
  setTimeout(() => void q.attempts.succeed(record.id, 'w', 1, { total: 1 }, artifact), 200);
  const t1 = Date.now();
  const final = await waiting;
  assert.equal(final?.status, 'succeeded');
  // Pub/sub, not the 2 s poll, woke it.
  assert.ok(Date.now() - t1 < 1_500, `woke after ${Date.now() - t1} ms`);
  assert.equal(await q.waitForCapture('missing', 100), null);
  // A caller that goes away stops the wait.
  const ac = new AbortController();
  const { record: r2 } = await q.requestCapture({ targetId: 'w', trigger: restTrigger() });
  setTimeout(() => ac.abort(), 100);
  const t2 = Date.now();
  assert.equal((await q.waitForCapture(r2.id, 20_000, ac.signal))?.status, 'queued');
  assert.ok(Date.now() - t2 < 1_500);
});

void test('target lock: exclusive, only the holder extends or releases, a lease expires', async () => {
  const q = open();
  assert.equal(await q.locks.acquire('t', 'A', 500), true);
  assert.equal(await q.locks.acquire('t', 'B', 500), false);
  assert.equal(await q.locks.extend('t', 'B', 500), false);
  assert.equal(await q.locks.release('t', 'B'), false);
  assert.equal(await q.locks.holder('t'), 'A');
  assert.equal(await q.locks.extend('t', 'A', 800), true);
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(await q.locks.holder('t'), 'A', 'the extension kept it');
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(await q.locks.holder('t'), null, 'the lease ran out');
  assert.equal(await q.locks.acquire('t', 'B', 5_000), true);
  assert.equal(await q.locks.release('t', 'A'), false, 'A cannot release B’s lock');
  assert.equal(await q.locks.release('t', 'B'), true);
  assert.equal(await q.locks.holder('t'), null);
});

void test('listCaptures: filters, newest first, cursor pages without gaps or repeats', async () => {
  const q = open();
  for (const id of ['l1', 'l2', 'l3']) await q.targets.put(nodeTarget(id));
  const made: string[] = [];
  for (let i = 0; i < 25; i++) {
    const options = i % 4 === 0 ? { kind: 'sampling' as const, samplingSeconds: 5 } : undefined;
    const { record } = await q.requestCapture({ targetId: `l${(i % 3) + 1}`, options, trigger: i % 5 === 0 ? { kind: 'schedule', who: 'sched' } : restTrigger(), force: true });
    made.push(record.id);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await q.listCaptures({ limit: 7, cursor });
    seen.push(...page.items.map((r) => r.id));
    cursor = page.nextCursor ?? undefined;
    pages++;
  } while (cursor !== undefined && pages < 10);
  assert.deepEqual(seen, [...made].reverse());
  const l2 = await q.listCaptures({ targetId: 'l2', limit: 100 });
  assert.equal(l2.items.length, 8);
  assert.ok(l2.items.every((r) => r.targetId === 'l2'));
  assert.equal(l2.nextCursor, null);
  const sched = await q.listCaptures({ triggerKind: 'schedule' });
  assert.equal(sched.items.length, 5);
  // i = 0, 4, …, 24 asked for sampling profiles: 7 of them, 3 of target l2 (i = 4, 16, … with i % 3 = 1).
  const sampling = await q.listCaptures({ kind: 'sampling', limit: 100 });
  assert.deepEqual(sampling.items.map((r) => r.id), made.filter((_, i) => i % 4 === 0).reverse());
  assert.ok(sampling.items.every((r) => r.options.kind === 'sampling'));
  assert.equal((await q.listCaptures({ kind: 'snapshot', limit: 100 })).items.length, 25 - 7);
  assert.deepEqual((await q.listCaptures({ targetId: 'l2', kind: 'sampling' })).items.map((r) => r.id), made.filter((_, i) => i % 4 === 0 && i % 3 === 1).reverse());
  await q.cancelCapture(made[0]!);
  assert.deepEqual((await q.listCaptures({ status: 'cancelled' })).items.map((r) => r.id), [made[0]]);
  assert.equal((await q.listCaptures({ targetId: 'l1', status: 'cancelled' })).items.length, 1);
  const mid = await q.getCapture(made[10]!);
  const from = new Date(mid!.createdAt);
  const recent = await q.listCaptures({ from, limit: 100 });
  assert.ok(recent.items.every((r) => r.createdAt >= mid!.createdAt));
  assert.ok(recent.items.some((r) => r.id === made[10]));
  assert.deepEqual((await q.listCaptures({ to: new Date(Date.parse(mid!.createdAt) - 10_000) })).items, []);
  await assert.rejects(q.listCaptures({ cursor: 'bogus!' }), (err) => isQueueError(err, 'invalid_cursor'));
  await assert.rejects(q.listCaptures({ limit: 0 }), (err) => isQueueError(err, 'invalid_input'));
});

void test('reconcile enqueues a queued record that lost its job, and fails one whose job failed', async () => {
  const q = open();
  await q.targets.put(nodeTarget('r'));
  const a = await q.requestCapture({ targetId: 'r', trigger: restTrigger() });
  const b = await q.requestCapture({ targetId: 'r', trigger: restTrigger(), force: true });
  await (await q.bull.getJob(a.record.id))?.remove();
  // B's job fails while its record says running, as after too many stalls (the record never hears of it).
  const worker = new Worker(
    CAPTURE_QUEUE,
    async (job) => {
      await q.attempts.start(job.data.captureId, 'r');
      throw new UnrecoverableError('job stalled more than allowable limit');
    },
    { connection: duplicateRedis(q.redis, { maxRetriesPerRequest: null }), prefix: q.keys.prefix, autorun: false },
  );
  const failed = new Promise<void>((resolve) => worker.once('failed', () => resolve()));
  void worker.run();
  await failed;
  await worker.close();
  await worker.disconnect();
  const report = await reconcileCaptures(q, 0);
  assert.deepEqual(report.enqueued, [a.record.id]);
  assert.deepEqual(report.abandoned, [b.record.id]);
  assert.ok(await q.bull.getJob(a.record.id));
  const rb = await q.getCapture(b.record.id);
  assert.equal(rb?.status, 'failed');
  assert.match(rb?.error?.message ?? '', /stalled/);
});

void test('reconcile over a backlog: waiting and delayed jobs are left alone without a per-record job lookup; a lost job is found among them', async () => {
  const q = open();
  await q.targets.put(nodeTarget('bk'));
  const backlog: string[] = [];
  for (let i = 0; i < 300; i++) backlog.push((await q.requestCapture({ targetId: 'bk', trigger: restTrigger(), force: true })).record.id);
  // One job waits for a retry (delayed), one record lost its job in the middle of the backlog.
  const first = (await q.bull.getJob(backlog[0]!))!;
  await first.remove();
  await q.bull.add(first.name, first.data, { jobId: first.id!, delay: 60_000 });
  const lost = backlog[150]!;
  await (await q.bull.getJob(lost))?.remove();
  await q.redis.config('RESETSTAT');
  const report = await reconcileCaptures(q, 0);
  assert.deepEqual(report, { enqueued: [lost], abandoned: [] });
  // getState per record ran LPOS over the wait list for each: O(backlog²) in Redis.
  assert.equal(await calls(q, 'lpos'), 0);
  // The wait and active lists (and paused), each read once for the whole backlog.
  assert.equal(await calls(q, 'lrange'), 3);
  assert.equal((await q.bull.getJob(lost))?.id, lost);
  // The next pass finds nothing to do.
  assert.deepEqual(await reconcileCaptures(q, 0), { enqueued: [], abandoned: [] });
});

const LES = [...PHASE_BUCKETS_SECONDS.map(String), '+Inf'];

/** Calls of one command since the last CONFIG RESETSTAT (commands run by scripts included). */
async function calls(q: HeapcapQueue, command: string): Promise<number> {
  const info = await q.redis.info('commandstats');
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return m === null ? 0 : Number(m[1]);
}

/** Runs a capture on target `t` to success with `timings`. */
async function finish(q: HeapcapQueue, t: string, timings: Record<string, number>): Promise<void> {
  const { record } = await q.requestCapture({ targetId: t, trigger: restTrigger(), force: true });
  const s = await q.attempts.start(record.id, t);
  assert.equal((await q.attempts.succeed(record.id, t, s.attempts, timings, artifact)).ok, true);
}

void test('phase histograms: N finishes with known timings give the cumulative buckets, count and sum; one integer increment per phase', async () => {
  const q = open();
  await q.targets.put(nodeTarget('a'));
  // generate (ms): on a bucket edge (10 ms → le 0.01), just above it, mid-range, and past the last bucket.
  const generate = [10, 10.1, 49.9, 250, 250, 1000.5, 700_000];
  const connect = [0, 0.1, 3, 3, 3, 3, 3];
  await q.redis.config('RESETSTAT');
  for (let i = 0; i < generate.length; i++) await finish(q, 'a', { generate: generate[i]!, connect: connect[i]! });
  // Per capture: the start's attempt counter; at the finish the status counter, a bucket and a
  // sum per phase (2 phases), the two byte counters. (Cumulative buckets written per finish were 24 floats here.)
  assert.equal(await calls(q, 'hincrbyfloat'), 0);
  assert.equal(await calls(q, 'hincrby'), generate.length * (1 + 1 + 2 * 2 + 2));

  const m = await q.finishedMetrics();
  const cumulative = (ms: number[]) => LES.map((le) => ({ le, count: ms.filter((x) => le === '+Inf' || x / 1000 <= Number(le)).length }));
  assert.deepEqual(m.phases.generate, { buckets: cumulative(generate), count: 7, sum: 701.5705 });
  assert.deepEqual(
    m.phases.generate?.buckets.map((b) => b.count),
    // 0.01 0.05 0.1 0.25 0.5 1  2.5 5  10 30 60 120 300 600 +Inf
    [1, 3, 3, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7],
  );
  assert.deepEqual(m.phases.connect, { buckets: cumulative(connect), count: 7, sum: 0.0151 });
  assert.deepEqual(m.finished, [{ status: 'succeeded', errorCode: '', count: 7 }]);
  assert.deepEqual(m.bytes, { uncompressed: 70, stored: 35 });
});

void test('phase histograms: the cumulative fields an older build wrote are added to the new counts', async () => {
  const q = open();
  await q.targets.put(nodeTarget('b'));
  const key = q.keys.finishedMetrics();
  // What the previous build's finish script wrote for two captures: generate 0.03 s and 2 s, as HINCRBYFLOATs.
  for (const s of [0.03, 2]) {
    for (const le of LES) if (le === '+Inf' || s <= Number(le)) await q.redis.hincrbyfloat(key, `h|generate|${le}`, 1);
    await q.redis.hincrbyfloat(key, 'hs|generate', s);
    await q.redis.hincrbyfloat(key, 'hc|generate', 1);
    await q.redis.hincrbyfloat(key, 'f|succeeded|', 1);
    await q.redis.hincrbyfloat(key, 'b|uncompressed', 1000);
  }
  // Then this build finishes one at 0.3 s: its integer increments land on the float-written counters.
  await finish(q, 'b', { generate: 300 });
  const m = await q.finishedMetrics();
  assert.deepEqual(
    m.phases.generate?.buckets.map((b) => b.count),
    // 0.01 0.05 0.1 0.25 0.5 1  2.5 5  10 30 60 120 300 600 +Inf
    [0, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3],
  );
  assert.equal(m.phases.generate?.count, 3);
  assert.ok(Math.abs((m.phases.generate?.sum ?? 0) - 2.33) < 1e-9);
  assert.deepEqual(m.finished, [{ status: 'succeeded', errorCode: '', count: 3 }]);
  assert.equal(m.bytes.uncompressed, 2010);
});
