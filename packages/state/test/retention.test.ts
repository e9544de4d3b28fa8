/**
 * The retention janitor against real Redis and a real file store: keepLast
 * per schedule with pins on top, the default age limit, a schedule's own age
 * limit, retries of failed deletions, record expiry, one run at a time.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { createTestWorld, startRedis, type RedisServer, type TestWorld } from '@heapcap/testkit';
import { Janitor, type ArtifactRemover, type RetentionDefaults } from '../src/retention/index.ts';
import { DAY, failedCapture, filesOf, pausedSchedule, scheduleTrigger, storedCapture } from './retention-helpers.ts';

let redis: RedisServer;
let world: TestWorld | undefined;
/** The janitor's log, dropped (its lines are tested through the API's log capture). */
const log = { info: () => undefined, warn: () => undefined };
const DEFAULTS: RetentionDefaults = { keepLast: 48, maxAgeDays: 30, recordTtlMs: 30 * DAY };
const REST = { kind: 'rest' as const, who: 'oncall' };

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});
after(async () => {
  await redis?.stop();
});

async function newWorld(): Promise<TestWorld> {
  world = await createTestWorld(redis.url);
  await world.queue.targets.put({ id: 'app', kind: 'node', inspect: '127.0.0.1:9', labels: { service: 'test' } });
  return world;
}

/** The real store, refusing deletions while `failing` (a seam we own: the janitor's remover). */
function flaky(w: TestWorld): ArtifactRemover & { failing: boolean; calls: number } {
  const r = {
    failing: true,
    calls: 0,
    async remove(target: { key: string }): Promise<void> {
      r.calls++;
      if (r.failing) throw new Error('storage_unavailable: refused by the test');
      await w.store.remove(target);
    },
  };
  return r;
}

void test('keepLast 3: only the newest 3 keep their artifacts, a pinned older one survives, expired records say who, why and when', async () => {
  const w = await newWorld();
  const q = w.queue;
  await q.schedules.put(pausedSchedule('k3', { keepLast: 3 }));
  const caps = [];
  for (let i = 0; i < 6; i++) caps.push(await storedCapture(w, 'app', scheduleTrigger('k3')));
  const rest = await storedCapture(w, 'app', REST);
  assert.equal((await q.setPin(caps[0]!.id, true, 'runbook', 'baseline before the deploy')).outcome, 'ok');

  const report = await new Janitor({ queue: q, store: w.store, log, defaults: DEFAULTS }).run();
  assert.equal(report.ran, true);
  assert.deepEqual(report.deleted.map((d) => d.captureId).sort(), [caps[1]!.id, caps[2]!.id].sort());
  assert.deepEqual(report.failed, []);

  for (const c of [caps[0]!, caps[3]!, caps[4]!, caps[5]!, rest]) {
    assert.deepEqual((await filesOf(w, c.id)).sort(), [`${c.id}.heapsnapshot.gz`, `${c.id}.manifest.json`], `${c.id} kept`);
    assert.equal((await q.getCapture(c.id))?.status, 'succeeded');
  }
  const pinned = await q.getCapture(caps[0]!.id);
  assert.equal(pinned?.pinned?.by, 'runbook');
  assert.equal(pinned?.pinned?.reason, 'baseline before the deploy');
  const audits = await q.audit.recent(100);
  for (const c of [caps[1]!, caps[2]!]) {
    assert.deepEqual(await filesOf(w, c.id), [], `${c.id}: snapshot and manifest deleted`);
    const r = await q.getCapture(c.id);
    assert.equal(r?.status, 'expired');
    assert.equal(r?.artifact, null);
    assert.equal(r?.expired?.by, 'retention');
    assert.equal(r?.expired?.reason, 'keepLast');
    assert.equal(r?.expired?.scheduleId, 'k3');
    assert.equal(r?.expired?.key, c.artifact?.key);
    assert.ok(Date.parse(r?.expired?.at ?? '') >= Date.parse(c.finishedAt ?? ''));
    // The rest of the record stays: who asked for it, why, when.
    assert.deepEqual(r?.trigger, c.trigger);
    assert.equal(r?.createdAt, c.createdAt);
    assert.ok(audits.some((a) => a.action === 'capture.expire' && a.who === 'retention' && a.captureId === c.id && a.details?.['reason'] === 'keepLast'));
    assert.equal((await q.setPin(c.id, true, 'runbook')).outcome, 'expired', 'nothing left to pin');
  }
  assert.deepEqual((await q.listCaptures({ status: 'expired' })).items.map((r) => r.id).sort(), [caps[1]!.id, caps[2]!.id].sort());
  assert.equal((await q.depth()).records.expired, 2);

  // Unpinned, the old one goes on the next run; a run with nothing to do deletes nothing.
  assert.equal((await q.setPin(caps[0]!.id, false, 'runbook')).outcome, 'ok');
  const second = await new Janitor({ queue: q, store: w.store, log, defaults: DEFAULTS }).run();
  assert.deepEqual(second.deleted.map((d) => d.captureId), [caps[0]!.id]);
  assert.deepEqual((await new Janitor({ queue: q, store: w.store, log, defaults: DEFAULTS }).run()).deleted, []);
  assert.equal((await q.scheduleMetrics()).retention.deleted, 3);
});

void test('a deletion the store refuses is retried on the next run, even after the policy stopped selecting it', async () => {
  const w = await newWorld();
  const q = w.queue;
  await q.schedules.put(pausedSchedule('k1', { keepLast: 1 }));
  const old = await storedCapture(w, 'app', scheduleTrigger('k1'));
  await storedCapture(w, 'app', scheduleTrigger('k1'));
  const store = flaky(w);
  const janitor = new Janitor({ queue: q, store, log, defaults: DEFAULTS });

  const first = await janitor.run();
  assert.deepEqual(first.deleted, []);
  assert.deepEqual(first.failed.map((f) => f.captureId), [old.id]);
  assert.match(first.failed[0]?.error ?? '', /refused by the test/);
  assert.equal((await q.getCapture(old.id))?.status, 'succeeded', 'not marked expired while its objects remain');
  assert.deepEqual((await filesOf(w, old.id)).length, 2);
  assert.deepEqual(await q.redis.zrange(q.keys.retentionPending(), 0, -1), [old.id]);
  // Mid-deletion it can no longer be pinned (the store may have deleted part of it).
  assert.equal((await q.setPin(old.id, true, 'runbook')).outcome, 'expiring');
  assert.equal((await q.scheduleMetrics()).retention.failures, 1);

  // The schedule is deleted meanwhile: its policy no longer selects the capture; the pending deletion still completes.
  await q.schedules.remove('k1');
  store.failing = false;
  const second = await janitor.run();
  assert.deepEqual(second.deleted, [{ captureId: old.id, reason: 'keepLast' }]);
  assert.equal((await q.getCapture(old.id))?.status, 'expired');
  assert.deepEqual(await filesOf(w, old.id), []);
  assert.deepEqual(await q.redis.zrange(q.keys.retentionPending(), 0, -1), []);
});

void test('the default age limit applies to every capture; a schedule\'s own maxAgeDays wins; 0 keeps forever', async () => {
  const w = await newWorld();
  const q = w.queue;
  await q.schedules.put(pausedSchedule('long', { maxAgeDays: 90 }));
  const rest = await storedCapture(w, 'app', REST);
  const sched = await storedCapture(w, 'app', scheduleTrigger('long'));
  const janitor = new Janitor({ queue: q, store: w.store, log, defaults: DEFAULTS });

  assert.deepEqual((await janitor.run(Date.now() + 29 * DAY)).deleted, []);
  assert.deepEqual((await janitor.run(Date.now() + 31 * DAY)).deleted, [{ captureId: rest.id, reason: 'maxAge' }]);
  assert.equal((await q.getCapture(sched.id))?.status, 'succeeded', 'its schedule keeps it 90 days');
  assert.deepEqual((await janitor.run(Date.now() + 91 * DAY)).deleted, [{ captureId: sched.id, reason: 'maxAge' }]);

  const keep = await storedCapture(w, 'app', REST);
  const forever = new Janitor({ queue: q, store: w.store, log, defaults: { ...DEFAULTS, maxAgeDays: 0 } });
  assert.deepEqual((await forever.run(Date.now() + 1_000 * DAY)).deleted, []);
  assert.equal((await q.getCapture(keep.id))?.status, 'succeeded');
});

void test('record TTL: records without an artifact are deleted with their index entries; pinned, live and stored ones stay', async () => {
  const w = await newWorld();
  const q = w.queue;
  await q.schedules.put(pausedSchedule('k1', { keepLast: 1 }));
  const failed = await failedCapture(w, 'app', scheduleTrigger('k1'));
  const pinnedFailed = await failedCapture(w, 'app', REST);
  await q.setPin(pinnedFailed.id, true, 'oncall', 'evidence');
  const expired = await storedCapture(w, 'app', scheduleTrigger('k1'));
  const kept = await storedCapture(w, 'app', scheduleTrigger('k1'));
  const { record: queued } = await q.requestCapture({ targetId: 'app', trigger: REST, force: true });
  const janitor = new Janitor({ queue: q, store: w.store, log, defaults: { ...DEFAULTS, maxAgeDays: 0 } });
  assert.deepEqual((await janitor.run()).deleted.map((d) => d.captureId), [expired.id]);

  // Inside the TTL nothing goes.
  assert.equal((await janitor.run(Date.now() + 29 * DAY)).recordsDeleted, 0);
  const report = await janitor.run(Date.now() + 31 * DAY);
  assert.equal(report.recordsDeleted, 2);
  for (const id of [failed.id, expired.id]) {
    assert.equal(await q.getCapture(id), null);
    for (const key of [q.keys.indexAll(), q.keys.indexTarget('app'), q.keys.indexStatus('failed'), q.keys.indexStatus('expired'), q.keys.indexTrigger('schedule'), q.keys.indexSchedule('k1')]) {
      assert.equal(await q.redis.zscore(key, id), null, `${id} left in ${key}`);
    }
  }
  for (const id of [pinnedFailed.id, kept.id, queued.id]) assert.notEqual(await q.getCapture(id), null, `${id} stays`);
  assert.deepEqual((await q.listCaptures({ limit: 100 })).items.map((r) => r.id).sort(), [pinnedFailed.id, kept.id, queued.id].sort());
  assert.equal((await q.scheduleMetrics()).retention.recordsDeleted, 2);
});

void test('one run at a time across processes', async () => {
  const w = await newWorld();
  await w.queue.schedules.put(pausedSchedule('k1', { keepLast: 1 }));
  await storedCapture(w, 'app', scheduleTrigger('k1'));
  await storedCapture(w, 'app', scheduleTrigger('k1'));
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered: () => void = () => undefined;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const slow: ArtifactRemover = {
    async remove(target) {
      entered();
      await gate;
      await w.store.remove(target);
    },
  };
  const a = new Janitor({ queue: w.newQueue(), store: slow, log, defaults: DEFAULTS });
  const b = new Janitor({ queue: w.newQueue(), store: w.store, log, defaults: DEFAULTS });
  const running = a.run();
  await inside;
  const other = await b.run();
  assert.equal(other.ran, false, 'the second process does nothing while the first runs');
  release();
  const first = await running;
  assert.equal(first.ran, true);
  assert.equal(first.deleted.length, 1);
});
