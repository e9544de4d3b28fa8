/**
 * The rules file applier on real Redis: three replicas (three queues on one
 * prefix) applying the same file at once make each rule once, with one job
 * scheduler per enabled schedule; applying it again writes nothing; API-made
 * rules are never removed by the file; an id the API holds refuses the file
 * whole; the file's checks name each problem's path.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { createTestWorld, startRedis, type RedisServer, type TestWorld } from '@heapcap/testkit';
import { checkRulesFile, RulesFileSchema, type RulesApplyReport, type Target } from '../src/index.ts';
import { buildSchedule, checkSchedule, ScheduleSpecSchema } from '../src/schedules/index.ts';

let redis: RedisServer;
let world: TestWorld | undefined;

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

const TARGETS: Target[] = [{ id: 'c-1', kind: 'node', inspect: '127.0.0.1:9', labels: { service: 'checkout' } }];
const CTX = { minIntervalMs: 1_000, watchIntervalMs: 15_000, watchRetentionMs: 86_400_000, targets: TARGETS };

const FILE = RulesFileSchema.parse({
  schedules: [
    { id: 'nightly', target: 'c-1', cron: '0 3 * * *' },
    { id: 'group', selector: { service: 'checkout' }, every: '1h' },
    { id: 'off', target: 'c-1', every: '2h', enabled: false },
  ],
  watchRules: [{ id: 'near-limit', target: 'c-1', when: { metric: 'heapUsedRatio', above: 0.9, forSeconds: 60 } }],
});

const added = (reports: RulesApplyReport[]): string[] => reports.flatMap((r) => [...r.schedules.added, ...r.watchRules.added]).sort();

void test('three replicas applying one file at once make each rule once; again changes nothing', async () => {
  world = await createTestWorld(redis.url);
  const replicas = [world.queue, world.newQueue(), world.newQueue()];
  // An API-made schedule the file does not know.
  const spec = ScheduleSpecSchema.parse({ id: 'by-hand', target: 'c-1', every: '30m' });
  await world.queue.schedules.put(buildSchedule(spec, checkSchedule(spec, CTX), 'runbook', null));

  const reports = await Promise.all(replicas.map((q) => q.rulesFile.apply(FILE, CTX)));
  assert.deepEqual(added(reports), ['group', 'near-limit', 'nightly', 'off'], 'each rule added by exactly one replica');
  const schedules = await world.queue.schedules.list();
  assert.deepEqual(
    schedules.map((s) => `${s.id}:${s.source ?? 'api'}:${s.owner}`),
    ['by-hand:api:runbook', 'group:file:rules-file', 'nightly:file:rules-file', 'off:file:rules-file'],
  );
  // by-hand, group, nightly (enabled) and nothing for the paused one: no doubles.
  assert.equal(await world.queue.schedules.schedulerCount(), 3);
  assert.deepEqual((await world.queue.watch.list()).map((r) => `${r.id}:${r.source}`), ['near-limit:file']);

  const again = await Promise.all(replicas.map((q) => q.rulesFile.apply(FILE, CTX)));
  for (const r of again) assert.deepEqual([r.schedules, r.watchRules], [{ added: [], updated: [], removed: [] }, { added: [], updated: [], removed: [] }]);

  // A changed file: one update, one removal; the API's schedule stays.
  const next = RulesFileSchema.parse({ schedules: [{ id: 'nightly', target: 'c-1', cron: '0 4 * * *' }], watchRules: [] });
  const changed = await Promise.all(replicas.map((q) => q.rulesFile.apply(next, CTX)));
  assert.deepEqual(changed.flatMap((r) => r.schedules.updated), ['nightly']);
  assert.deepEqual(changed.flatMap((r) => r.schedules.removed).sort(), ['group', 'off']);
  assert.deepEqual(changed.flatMap((r) => r.watchRules.removed), ['near-limit']);
  assert.deepEqual((await world.queue.schedules.list()).map((s) => `${s.id}:${s.cron ?? s.every}`), ['by-hand:30m', 'nightly:0 4 * * *']);
  assert.equal(await world.queue.schedules.schedulerCount(), 2);
});

void test('an id the API holds refuses the file whole; checks name the path of each problem', async () => {
  world = await createTestWorld(redis.url);
  const spec = ScheduleSpecSchema.parse({ id: 'nightly', target: 'c-1', every: '30m' });
  await world.queue.schedules.put(buildSchedule(spec, checkSchedule(spec, CTX), 'runbook', null));
  const report = await world.queue.rulesFile.apply(FILE, CTX);
  assert.deepEqual(report.conflicts.map((c) => c.path), ['schedules.0.id']);
  assert.deepEqual((await world.queue.schedules.list()).map((s) => s.id), ['nightly'], 'nothing written');
  assert.deepEqual(await world.queue.watch.list(), []);

  const bad = RulesFileSchema.parse({ schedules: [{ id: 'x', target: 'nope', every: '1h' }], watchRules: [{ id: 'y', target: 'c-1', when: { metric: 'heapUsedRatio', above: 0.9, forSeconds: 60 }, cooldownSeconds: 1 }] });
  assert.deepEqual(
    checkRulesFile(bad, CTX).map((i) => i.path),
    ['schedules.0.target', 'watchRules.0.cooldownSeconds'],
  );
  const noId = RulesFileSchema.safeParse({ schedules: [{ target: 'c-1', every: '1h' }, { id: 'a', target: 'c-1', every: '1h' }, { id: 'a', target: 'c-1', every: '2h' }] });
  assert.equal(noId.success, false);
  assert.deepEqual(noId.error!.issues.map((i) => i.path.join('.')), ['schedules.0', 'schedules.2.id']);
});
