import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { isQueueError, type HeapcapQueue } from '../src/index.ts';
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

void test('50 concurrent requests for one target create exactly one capture and one job', async () => {
  const q = open();
  await q.targets.put(nodeTarget('hot'));
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => q.requestCapture({ targetId: 'hot', trigger: restTrigger(`u${i}`) })));
  const ids = new Set(results.map((r) => r.record.id));
  assert.equal(ids.size, 1);
  assert.equal(results.filter((r) => r.created).length, 1);
  assert.equal(results.filter((r) => r.coalesced).length, 49);
  const [id] = [...ids];
  const record = await q.getCapture(id!);
  assert.equal(record?.coalesced, 49);
  assert.equal(record?.status, 'queued');
  const counts = await q.bull.getJobCounts('waiting');
  assert.equal(counts['waiting'], 1);
  const job = await q.bull.getJob(id!);
  assert.deepEqual(job?.data, { captureId: id, targetId: 'hot' });
  assert.equal(job?.name, 'capture');
});

void test('force creates a new capture each time; a later plain request joins the newest', async () => {
  const q = open();
  await q.targets.put(nodeTarget('t1'));
  const a = await q.requestCapture({ targetId: 't1', trigger: restTrigger() });
  const b = await q.requestCapture({ targetId: 't1', trigger: restTrigger(), force: true });
  assert.ok(a.created && b.created);
  assert.notEqual(a.record.id, b.record.id);
  const c = await q.requestCapture({ targetId: 't1', trigger: restTrigger() });
  assert.equal(c.coalesced, true);
  assert.equal(c.record.id, b.record.id);
  assert.equal((await q.depth()).jobs.waiting, 2);
});

void test('a finished capture is not joined: the next request creates a new one', async () => {
  const q = open();
  await q.targets.put(nodeTarget('t2'));
  const a = await q.requestCapture({ targetId: 't2', trigger: restTrigger() });
  const cancelled = await q.cancelCapture(a.record.id);
  assert.equal(cancelled.outcome, 'cancelled');
  const b = await q.requestCapture({ targetId: 't2', trigger: restTrigger() });
  assert.equal(b.created, true);
  assert.notEqual(b.record.id, a.record.id);
});

void test('Idempotency-Key: same key and body replays, other body is refused, other caller is separate', async () => {
  const q = open();
  await q.targets.put(nodeTarget('t3'));
  const first = await q.requestCapture({ targetId: 't3', trigger: restTrigger('alice', 'leak'), idempotencyKey: 'k1', force: true });
  const again = await q.requestCapture({ targetId: 't3', trigger: restTrigger('alice', 'leak'), idempotencyKey: 'k1', force: true });
  assert.equal(again.replayed, true);
  assert.equal(again.created, false);
  assert.equal(again.record.id, first.record.id);
  await assert.rejects(
    q.requestCapture({ targetId: 't3', trigger: restTrigger('alice', 'other reason'), idempotencyKey: 'k1', force: true }),
    (err) => isQueueError(err, 'idempotency_key_reused'),
  );
  const bob = await q.requestCapture({ targetId: 't3', trigger: restTrigger('bob', 'leak'), idempotencyKey: 'k1', force: true });
  assert.equal(bob.created, true);
  assert.notEqual(bob.record.id, first.record.id);
  // The key survives the capture's end: a replay after cancel still returns the same capture.
  await q.cancelCapture(first.record.id);
  const late = await q.requestCapture({ targetId: 't3', trigger: restTrigger('alice', 'leak'), idempotencyKey: 'k1', force: true });
  assert.equal(late.record.id, first.record.id);
  assert.equal(late.record.status, 'cancelled');
  assert.equal((await q.depth()).jobs.waiting, 1, 'only bob’s capture is left to run');
});

void test('a coalesced request with an Idempotency-Key replays to the capture it joined', async () => {
  const q = open();
  await q.targets.put(nodeTarget('t4'));
  const a = await q.requestCapture({ targetId: 't4', trigger: restTrigger('x') });
  const j = await q.requestCapture({ targetId: 't4', trigger: restTrigger('y'), idempotencyKey: 'k' });
  assert.equal(j.coalesced, true);
  const r = await q.requestCapture({ targetId: 't4', trigger: restTrigger('y'), idempotencyKey: 'k' });
  assert.equal(r.replayed, true);
  assert.equal(r.record.id, a.record.id);
  assert.equal(r.record.coalesced, 1, 'a replay does not count as another join');
});

void test('unknown target: target_not_found and nothing is written', async () => {
  const q = open();
  await assert.rejects(q.requestCapture({ targetId: 'nope', trigger: restTrigger() }), (err) => isQueueError(err, 'target_not_found'));
  assert.deepEqual((await q.listCaptures()).items, []);
  assert.equal((await q.depth()).jobs.waiting, 0);
});

void test('records carry the target labels, defaults of options and the trigger', async () => {
  const q = open();
  await q.targets.put({ ...nodeTarget('t5'), labels: { service: 'checkout', env: 'prod' } });
  const { record } = await q.requestCapture({ targetId: 't5', trigger: restTrigger('oncall', 'p1'), options: { gc: true } });
  const stored = await q.getCapture(record.id);
  assert.deepEqual(stored, record);
  assert.deepEqual(stored?.labels, { service: 'checkout', env: 'prod' });
  assert.equal(stored?.options.gc, true);
  assert.equal(stored?.options.warm, 'auto');
  assert.deepEqual(stored?.trigger, { kind: 'rest', who: 'oncall', reason: 'p1' });
});

void test('a sampling profile request never joins a snapshot of the same target (nor the reverse); same kinds still coalesce', async () => {
  const q = open();
  await q.targets.put(nodeTarget('t-kinds'));
  const snapshot = await q.requestCapture({ targetId: 't-kinds', trigger: restTrigger() });
  const sampling = await q.requestCapture({ targetId: 't-kinds', trigger: restTrigger(), options: { kind: 'sampling', samplingSeconds: 5 } });
  assert.equal(sampling.created, true, 'a sampling request does not join the queued snapshot');
  assert.notEqual(sampling.record.id, snapshot.record.id);
  assert.equal(sampling.record.options.kind, 'sampling');
  assert.equal(sampling.record.options.samplingSeconds, 5);
  const secondSampling = await q.requestCapture({ targetId: 't-kinds', trigger: restTrigger(), options: { kind: 'sampling' } });
  assert.equal(secondSampling.coalesced, true);
  assert.equal(secondSampling.record.id, sampling.record.id);
  const secondSnapshot = await q.requestCapture({ targetId: 't-kinds', trigger: restTrigger() });
  assert.equal(secondSnapshot.coalesced, true, 'a snapshot request joins the snapshot, not the newer sampling capture');
  assert.equal(secondSnapshot.record.id, snapshot.record.id);
  assert.equal((await q.getCapture(snapshot.record.id))?.coalesced, 1);
  assert.equal((await q.getCapture(sampling.record.id))?.coalesced, 1);
});
