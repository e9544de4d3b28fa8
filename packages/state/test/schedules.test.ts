/**
 * Schedules in the queue: timing (durations, cron in a time zone), spreading,
 * the checks behind 400s, the store and its job schedulers, and runs/turns:
 * member jobs per target, coalescing, the group's maxConcurrent under the
 * admission lock, skips. Real Redis; nothing here runs a capture.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { parseDuration } from '@heapcap/config';
import { createTestWorld, startRedis, type RedisServer, type TestWorld } from '@heapcap/testkit';
import { selectTargets, type Target } from '../src/index.ts';
import { buildSchedule, checkSchedule, intervalAfter, MemberJobSchema, nextRuns, ScheduleSpecSchema, spreadOffsets, type MemberJob, type Schedule, type ScheduleSpec } from '../src/schedules/index.ts';

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

const node = (id: string, labels: Record<string, string>): Target => ({ id, kind: 'node', inspect: '127.0.0.1:9', labels });
const REGISTRY = [node('c-2', { service: 'checkout', env: 'prod' }), node('c-1', { service: 'checkout', env: 'prod' }), node('c-3', { service: 'checkout', env: 'staging' }), node('search', { service: 'search' })];

/** Parse a spec through the API's schema, check it and build the schedule. */
function schedule(spec: ScheduleSpec, owner = 'runbook', targets: readonly Target[] = REGISTRY): Schedule {
  const parsed = ScheduleSpecSchema.parse(spec);
  const check = checkSchedule(parsed, { minIntervalMs: 1_000, targets });
  assert.deepEqual(check.issues, []);
  return buildSchedule(parsed, check, owner, null);
}

void test('durations, selectors and spread offsets', () => {
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('15m'), 900_000);
  assert.equal(parseDuration('6h'), 21_600_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  for (const bad of ['', '15', 'm', '1.5h', '-1s', '15 m', '1w']) assert.equal(parseDuration(bad), undefined, bad);
  assert.deepEqual(selectTargets(REGISTRY, { service: 'checkout', env: 'prod' }).map((t) => t.id), ['c-1', 'c-2']);
  assert.deepEqual(selectTargets(REGISTRY, { service: 'nope' }), []);
  // Even and deterministic, whatever order the targets come in.
  assert.deepEqual(spreadOffsets(['c', 'a', 'b'], 6_000), [
    { targetId: 'a', offsetMs: 0 },
    { targetId: 'b', offsetMs: 2_000 },
    { targetId: 'c', offsetMs: 4_000 },
  ]);
  assert.deepEqual(spreadOffsets(['a'], 1_800_000), [{ targetId: 'a', offsetMs: 0 }]);
});

void test('cron in a time zone: next runs, the interval after a run', () => {
  const s = schedule({ target: 'search', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' });
  // Friday 2026-01-02 10:00 UTC → Monday 5th 08:00 UTC (09:00 CET), Tuesday, Wednesday.
  const from = Date.parse('2026-01-02T10:00:00Z');
  assert.deepEqual(nextRuns(s, from, undefined).map((t) => new Date(t).toISOString()), ['2026-01-05T08:00:00.000Z', '2026-01-06T08:00:00.000Z', '2026-01-07T08:00:00.000Z']);
  // In summer the same 09:00 is 07:00 UTC.
  assert.equal(new Date(nextRuns(s, Date.parse('2026-07-01T00:00:00Z'), undefined, 1)[0]!).toISOString(), '2026-07-01T07:00:00.000Z');
  assert.equal(intervalAfter(s, Date.parse('2026-01-05T08:00:00Z')), 86_400_000);
  assert.equal(intervalAfter(s, Date.parse('2026-01-09T08:00:00Z')), 3 * 86_400_000, 'Friday to Monday');
  const every = schedule({ target: 'search', every: '15m' });
  assert.deepEqual(nextRuns(every, 0, 1_000), [1_000, 901_000, 1_801_000]);
});

void test('checks: each bad field is named with a reason', () => {
  const issues = (spec: unknown, min = 60_000): { path: string; message: string }[] => {
    const shape = ScheduleSpecSchema.safeParse(spec);
    if (!shape.success) return shape.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    return checkSchedule(shape.data, { minIntervalMs: min, targets: REGISTRY }).issues;
  };
  const only = (spec: unknown, path: string, pattern: RegExp, min?: number): void => {
    const got = issues(spec, min);
    assert.deepEqual(got.map((i) => i.path), [path], JSON.stringify(got));
    assert.match(got[0]!.message, pattern);
  };
  only({ target: 'search', cron: '61 * * * *' }, 'cron', /not a valid cron expression/);
  only({ target: 'search', cron: '* * * *' }, 'cron', /5 fields/);
  only({ target: 'search', cron: '0 * * * *', timezone: 'Mars/Olympus' }, 'timezone', /unknown time zone/);
  only({ target: 'search', every: '30s' }, 'every', /below the minimum interval 1m \(HEAPCAP_SCHEDULE_MIN_INTERVAL\)/);
  only({ target: 'search', cron: '* * * * *' }, 'cron', /every 1m, below the minimum interval 5m/, 300_000);
  only({ target: 'search', cron: '0,20 9 * * *' }, 'cron', /every 20m, below the minimum interval 30m/, 1_800_000);
  only({ target: 'search', cron: '0 1,23 * * *' }, 'cron', /every 2h, below the minimum interval 3h/, 3 * 3_600_000);
  assert.deepEqual(issues({ target: 'search', cron: '0 1,23 * * *' }, 2 * 3_600_000), [], 'the gap across midnight counts');
  only({ target: 'search', every: 'soon' }, 'every', /not a duration/);
  only({ target: 'search', every: '15m', retention: { keepLast: 0 } }, 'retention.keepLast', /at least 1/);
  only({ target: 'search', every: '15m', retention: { maxAgeDays: 0 } }, 'retention.maxAgeDays', /more than 0/);
  only({ target: 'nope', every: '15m' }, 'target', /no target "nope" in the registry/);
  only({ selector: { service: 'chekout' }, every: '15m' }, 'selector', /matches no registered target/);
  only({ selector: {}, every: '15m' }, 'selector', /at least one label/);
  only({ target: 'search', every: '15m', cron: '*/15 * * * *' }, 'cron', /exactly one of every/);
  only({ target: 'search' }, 'every', /exactly one of every/);
  only({ target: 'search', selector: { service: 'search' }, every: '15m' }, 'selector', /exactly one of target/);
  only({ every: '15m' }, 'target', /exactly one of target/);
  only({ target: 'search', every: '15m', timezone: 'UTC' }, 'timezone', /cron only/);
  only({ target: 'search', every: '15m', colour: 'blue' }, '', /Unrecognized key/);
  assert.deepEqual(issues({ selector: { service: 'checkout', env: 'prod' }, every: '30m', retention: { keepLast: 48 } }), []);
  assert.equal(checkSchedule(ScheduleSpecSchema.parse({ selector: { service: 'checkout' }, every: '30m' }), { minIntervalMs: 1, targets: REGISTRY }).matches, 3);
});

void test('store: put, list, pause and delete keep exactly one job scheduler per enabled schedule; reconcile heals', async () => {
  world = await createTestWorld(redis.url);
  const q = world.queue;
  const s = schedule({ id: 'nightly', target: 'search', cron: '0 3 * * *', timezone: 'UTC' });
  assert.deepEqual(await q.schedules.put(s), { created: true });
  assert.deepEqual(await q.schedules.put(s), { created: false });
  assert.equal(await q.schedules.schedulerCount(), 1);
  assert.equal((await q.schedules.bull.getJobScheduler('nightly'))?.pattern, '0 3 * * *');
  const next = await q.schedules.schedulerNext('nightly');
  assert.equal(new Date(next ?? 0).toISOString().slice(11), '03:00:00.000Z');

  await q.schedules.put({ ...s, enabled: false });
  assert.equal(await q.schedules.schedulerCount(), 0, 'paused: no scheduler');
  assert.deepEqual((await q.schedules.list()).map((x) => x.enabled), [false]);

  // A scheduler without a definition (a crash between the two writes of a delete), and a definition without one.
  await q.schedules.bull.upsertJobScheduler('orphan', { every: 60_000 }, { name: 'schedule-run', data: { scheduleId: 'orphan' } });
  await q.redis.hset(q.keys.schedules(), 'nightly', JSON.stringify({ ...s, enabled: true }));
  assert.deepEqual(await q.schedules.reconcile(), { added: ['nightly'], removed: ['orphan'], healed: [], overdue: [] });
  assert.deepEqual((await q.schedules.bull.getJobSchedulers()).map((x) => x.key), ['nightly']);
  assert.deepEqual(await q.schedules.reconcile(), { added: [], removed: [], healed: [], overdue: [] });

  assert.equal(await q.schedules.remove('nightly'), true);
  assert.equal(await q.schedules.schedulerCount(), 0);
  assert.equal(await q.schedules.get('nightly'), null);
  assert.equal(await q.schedules.remove('nightly'), false);
});

void test('reconcile: a scheduler whose next run is overdue with its job gone is upserted again; one whose job waits is only reported', async () => {
  world = await createTestWorld(redis.url);
  const q = world.queue;
  await q.schedules.put(schedule({ id: 'often', target: 'search', every: '1m' }));
  await q.schedules.ensureJanitor(3_600_000);
  const next = (await q.schedules.schedulerNext('often'))!;
  const janitorNext = (await q.schedules.bull.getJobScheduler('_janitor'))!.next!;
  // Overdue (as seen from later) with its job still waiting (an `every` scheduler's first run is due at once), no worker running: reported, nothing changed.
  const later = Math.max(next, janitorNext) + 60_000;
  const waiting = await q.schedules.reconcile(later);
  assert.deepEqual(waiting.healed, []);
  assert.deepEqual(waiting.overdue.map((o) => [o.id, o.state]).sort(), [['_janitor', 'waiting'], ['often', 'waiting']]);
  assert.equal(await q.schedules.schedulerNext('often'), next);
  // The run's job gone (what a process lost between a run's start and BullMQ scheduling the next leaves): healed.
  // BullMQ refuses to remove a scheduler's job, so its keys go by hand: the job's hash and its place in the wait list.
  for (const id of [`repeat:often:${next}`, `repeat:_janitor:${janitorNext}`]) {
    assert.equal(await q.redis.lrem(q.schedules.bull.toKey('wait'), 0, id), 1);
    assert.equal(await q.redis.del(q.schedules.bull.toKey(id)), 1);
  }
  const healed = await q.schedules.reconcile(later);
  assert.deepEqual(healed.healed.sort(), ['_janitor', 'often']);
  assert.deepEqual(healed.overdue, []);
  const again = (await q.schedules.schedulerNext('often'))!;
  assert.ok(await q.schedules.bull.getJob(`repeat:often:${again}`), 'the healed scheduler has a job for its next run');
  assert.ok(await q.schedules.bull.getJob(`repeat:_janitor:${(await q.schedules.bull.getJobScheduler('_janitor'))!.next}`), "the janitor's too");
  // Nothing overdue as seen from now.
  assert.deepEqual(await q.schedules.reconcile(), { added: [], removed: [], healed: [], overdue: [] });
});

async function memberJobs(w: TestWorld): Promise<{ job: MemberJob; delay: number }[]> {
  const jobs = await w.queue.schedules.bull.getJobs(['delayed', 'waiting']);
  return jobs
    .filter((j) => j.name === 'schedule-member')
    .map((j) => ({ job: MemberJobSchema.parse(j.data), delay: j.opts.delay ?? 0 }))
    .sort((a, b) => a.job.targetId.localeCompare(b.job.targetId));
}

void test('a run fans out one member job per target of the group, spread over the interval, once per run', async () => {
  const w = (world = await createTestWorld(redis.url, { targets: REGISTRY }));
  const q = w.queue;
  await q.schedules.put({ ...schedule({ id: 'grp', selector: { service: 'checkout' }, every: '6s' }), enabled: false });
  await q.schedules.put({ ...(await q.schedules.get('grp'))!, enabled: true });
  await q.schedules.bull.removeJobScheduler('grp'); // no runs of its own: this test plans them
  const runAt = Date.now();
  const plan = await q.planScheduleRun('grp', runAt);
  assert.equal(plan.kind, 'planned');
  await q.planScheduleRun('grp', runAt);
  const jobs = await memberJobs(w);
  assert.deepEqual(jobs.map((j) => j.job.targetId), ['c-1', 'c-2', 'c-3'], 'one per target, even when a run is planned twice');
  for (const [i, j] of jobs.entries()) {
    assert.equal(j.job.runAt, runAt);
    assert.equal(j.job.deadline, runAt + 6_000);
    assert.ok(Math.abs(j.delay - i * 2_000) < 500, `member ${i} delayed ${j.delay} ms`);
  }

  // A selector that matches nothing at run time: a skipped turn, shown on the schedule.
  await q.schedules.put({ ...(await q.schedules.get('grp'))!, selector: { service: 'gone' } });
  const empty = await q.planScheduleRun('grp', runAt + 6_000);
  assert.equal(empty.kind, 'empty');
  assert.equal((await q.schedules.lastRuns()).get('grp')?.lastRun.reason, 'no_targets');
  assert.deepEqual(await q.schedules.runCounts(), { created: 0, coalesced: 0, skipped: 1 });
});

void test("a one-target schedule's run takes its turn itself (no member job); a retried run takes none again; a turn that must wait gets a member job", async () => {
  const w = (world = await createTestWorld(redis.url, { targets: REGISTRY }));
  const q = w.queue;
  await q.schedules.put({ ...schedule({ id: 'one', target: 'search', every: '6s' }), enabled: false });
  await q.schedules.put({ ...(await q.schedules.get('one'))!, enabled: true });
  await q.schedules.bull.removeJobScheduler('one'); // no runs of its own: this test plans them
  const runAt = Date.now();
  const plan = await q.planScheduleRun('one', runAt);
  assert.ok(plan.kind === 'taken' && !plan.again && plan.turn.outcome === 'created' && plan.turn.targetId === 'search', JSON.stringify(plan));
  const captureId = plan.turn.captureId ?? '';
  assert.deepEqual((await q.getCapture(captureId))?.trigger, { kind: 'schedule', who: 'runbook', scheduleId: 'one', reason: 'schedule one' });
  assert.deepEqual(await memberJobs(w), [], 'no member job');
  // The capture ends, so a second turn would create another: a retry of the run (its job stalled) finds the turn recorded.
  await q.cancelCapture(captureId);
  const again = await q.planScheduleRun('one', runAt);
  assert.ok(again.kind === 'taken' && again.again && again.turn.captureId === captureId, JSON.stringify(again));
  assert.deepEqual(await q.schedules.runCounts(), { created: 1, coalesced: 0, skipped: 0 });
  // A last turn this build cannot read (another version's skip reason, during a rolling upgrade) does not stop the next run.
  await q.redis.hset(q.keys.scheduleRuns(), 'one', JSON.stringify({ ...again.turn, outcome: 'skipped', reason: 'a-reason-of-a-newer-build' }));
  // The next run, while another replica holds the admission lock: a member job takes the turn once it is free.
  await q.redis.set(q.keys.scheduleAdmitLock('one'), 'another-replica', 'PX', 10_000);
  const next = runAt + 6_000;
  const waits = await q.planScheduleRun('one', next);
  assert.deepEqual(waits, { kind: 'planned', members: [{ targetId: 'search', offsetMs: 0 }], intervalMs: 6_000 });
  const jobs = await memberJobs(w);
  assert.deepEqual(jobs.map((j) => [j.job, j.delay]), [[{ scheduleId: 'one', targetId: 'search', runAt: next, deadline: next + 6_000 }, 0]]);
  await q.redis.del(q.keys.scheduleAdmitLock('one'));
  const turn = await q.takeScheduleTurn(jobs[0]!.job);
  assert.ok(turn.kind === 'done' && turn.turn.outcome === 'created' && turn.turn.captureId !== captureId, JSON.stringify(turn));
  // A target no longer registered: the run is a skipped turn, as before.
  await q.targets.remove('search');
  const empty = await q.planScheduleRun('one', next + 6_000);
  assert.ok(empty.kind === 'empty' && empty.turn.reason === 'no_targets', JSON.stringify(empty));
  assert.deepEqual(await q.schedules.runCounts(), { created: 2, coalesced: 0, skipped: 1 });
});

void test('turns: join a running capture, wait while the group is at maxConcurrent, skip when the target left or time ran out', async () => {
  const w = (world = await createTestWorld(redis.url, { targets: REGISTRY }));
  const q = w.queue;
  const s = { ...schedule({ id: 'grp', selector: { service: 'checkout' }, every: '1h', maxConcurrent: 1 }), enabled: true };
  await q.redis.hset(q.keys.schedules(), s.id, JSON.stringify(s));
  const runAt = Date.now();
  const member = (targetId: string, extra: Partial<MemberJob> = {}): MemberJob => ({ scheduleId: 'grp', targetId, runAt, deadline: runAt + 3_600_000, ...extra });

  const first = await q.takeScheduleTurn(member('c-1'));
  assert.equal(first.kind, 'done');
  assert.equal(first.kind === 'done' && first.turn.outcome, 'created');
  const captureId = first.kind === 'done' ? first.turn.captureId : null;
  const rec = await q.getCapture(captureId ?? '');
  assert.deepEqual(rec?.trigger, { kind: 'schedule', who: 'runbook', scheduleId: 'grp', reason: 'schedule grp' });
  // c-1's capture is queued: the group (maxConcurrent 1) is full for c-2 and c-3, but c-1 itself joins it.
  assert.deepEqual(await q.takeScheduleTurn(member('c-2')), { kind: 'wait', why: 'group_busy' });
  const again = await q.takeScheduleTurn(member('c-1'));
  assert.ok(again.kind === 'done' && again.turn.outcome === 'coalesced' && again.turn.coalesced && again.turn.captureId === captureId);
  assert.equal((await q.getCapture(captureId ?? ''))?.coalesced, 1);
  // Two replicas taking turns at the same moment once the group frees: exactly one passes.
  await q.cancelCapture(captureId ?? '');
  const other = w.newQueue();
  const both = await Promise.all([q.takeScheduleTurn(member('c-2')), other.takeScheduleTurn(member('c-3'))]);
  assert.deepEqual(both.map((r) => (r.kind === 'done' ? r.turn.outcome : r.kind)).sort(), ['created', 'wait']);

  // Out of time: skipped, as group_busy when the turn had waited for its group.
  const late = await q.takeScheduleTurn(member('c-3', { deadline: Date.now() - 1, waited: 'group_busy' }));
  assert.ok(late.kind === 'done' && late.turn.outcome === 'skipped' && late.turn.reason === 'group_busy');
  const overdue = await q.takeScheduleTurn(member('c-3', { deadline: Date.now() - 1 }));
  assert.ok(overdue.kind === 'done' && overdue.turn.reason === 'overdue');
  // The target left the registry, or its labels no longer match.
  await q.targets.remove('c-3');
  const gone = await q.takeScheduleTurn(member('c-3'));
  assert.ok(gone.kind === 'done' && gone.turn.reason === 'target_gone');
  await q.targets.put(node('c-3', { service: 'search' }));
  const left = await q.takeScheduleTurn(member('c-3'));
  assert.ok(left.kind === 'done' && left.turn.reason === 'left_group');
  // A deleted schedule's leftover turn does nothing and leaves no state.
  await q.schedules.remove('grp');
  assert.deepEqual(await q.takeScheduleTurn(member('c-1')), { kind: 'gone' });
  assert.equal((await q.schedules.lastRuns()).has('grp'), false);
  assert.deepEqual(await q.schedules.runCounts(), { created: 2, coalesced: 1, skipped: 4 });
});
