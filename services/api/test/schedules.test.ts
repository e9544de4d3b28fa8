/**
 * Schedules against real Redis and real Node targets: runs make captures with
 * trigger.kind = schedule, a PUT changes the one job scheduler (counted in
 * Redis), pause/resume/delete stop and restart runs; group schedules spread
 * over the interval with at most maxConcurrent at once.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { parseConfig } from '@heapcap/config';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import { ScheduleWorker } from '@heapcap/worker';
import { auth, startHarness, type Harness } from './harness.ts';
import { assertQuiet, gaps, scheduleCaptures, schedulerIds, settled } from './schedule-helpers.ts';

/** Tests lower the minimum interval through the variable, as an operator would. */
const FAST = { HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s', HEAPCAP_RETENTION_INTERVAL: '1h' };

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

interface View {
  schedule: { id: string; every?: string; owner: string; enabled: boolean };
  state: string;
  nextRunAt: string[];
  matches: number;
  lastRun: { outcome: string; captureId: string | null } | null;
  lastCapture: { id: string; status: string | null } | null;
}

void test('every 2s captures its target; PUT 3s keeps one scheduler; pause, resume and delete', async () => {
  h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 2 }, schedules: { reconcileIntervalMs: 1_000 } });
  await h.world.addTarget('app', 2);
  const q = h.queue;

  const created = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'app-2s', target: 'app', every: '2s', reason: 'leak hunt' } });
  assert.equal(created.statusCode, 201, created.body);
  const v = created.json<View>();
  assert.equal(v.state, 'active');
  assert.equal(v.schedule.owner, 'runbook');
  assert.equal(v.matches, 1);
  assert.equal(v.nextRunAt.length, 3);
  assert.deepEqual(gaps(v.nextRunAt.map((t) => ({ createdAt: t }) as never)), [2_000, 2_000]);

  const two = await waitFor(async () => {
    const all = (await scheduleCaptures(q, 'app-2s')).filter((r) => r.status === 'succeeded');
    return all.length >= 2 ? all : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200, what: 'two scheduled captures' });
  for (const r of two) {
    assert.deepEqual(r.trigger, { kind: 'schedule', who: 'runbook', scheduleId: 'app-2s', reason: 'leak hunt' });
    assert.equal(r.targetId, 'app');
    // The manifest beside the snapshot says the same.
    const manifest = JSON.parse(await readFile(join(h.storage.path, r.artifact?.manifestKey ?? ''), 'utf8')) as { trigger: unknown };
    assert.deepEqual(manifest.trigger, r.trigger);
  }
  assert.deepEqual(await schedulerIds(q), ['app-2s']);
  const shown = (await h.app.inject({ method: 'GET', url: '/v1/schedules/app-2s', headers: auth('reader') })).json<View>();
  assert.ok(shown.lastRun !== null && shown.lastCapture !== null, JSON.stringify(shown));
  assert.ok(['created', 'coalesced'].includes(shown.lastRun.outcome));

  // PUT with every 3s: the same scheduler, with the new interval; still exactly one.
  const put = await h.app.inject({ method: 'PUT', url: '/v1/schedules/app-2s', headers: auth('runbook'), payload: { target: 'app', every: '3s', reason: 'leak hunt' } });
  assert.equal(put.statusCode, 200, put.body);
  const changedAt = Date.now();
  assert.deepEqual(await schedulerIds(q), ['app-2s']);
  assert.equal((await q.schedules.bull.getJobScheduler('app-2s'))?.every, 3_000);
  const afterPut = await waitFor(async () => {
    const all = (await scheduleCaptures(q, 'app-2s')).filter((r) => Date.parse(r.createdAt) > changedAt);
    return all.length >= 3 ? all : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200, what: 'three captures after the PUT' });
  // Every 3 s now (a run that found the previous capture still running joins it: a gap of 6 s).
  for (const g of gaps(afterPut)) assert.ok(g >= 2_500, `captures ${g} ms apart after every: 3s (${JSON.stringify(gaps(afterPut))})`);
  assert.deepEqual(await schedulerIds(q), ['app-2s'], 'never a second scheduler');

  // Pause: the scheduler goes, and nothing runs.
  const paused = await h.app.inject({ method: 'POST', url: '/v1/schedules/app-2s/pause', headers: auth('runbook') });
  assert.equal(paused.statusCode, 200, paused.body);
  assert.equal(paused.json<View>().state, 'paused');
  assert.deepEqual(paused.json<View>().nextRunAt, []);
  assert.deepEqual(await schedulerIds(q), []);
  await settled(q, 'app-2s');
  await assertQuiet(q, 'app-2s', 7_000, 'paused');

  // Resume: runs again.
  const before = (await scheduleCaptures(q, 'app-2s')).length;
  const resumed = await h.app.inject({ method: 'POST', url: '/v1/schedules/app-2s/resume', headers: auth('runbook') });
  assert.equal(resumed.json<View>().state, 'active');
  assert.deepEqual(await schedulerIds(q), ['app-2s']);
  await waitFor(async () => (await scheduleCaptures(q, 'app-2s')).length > before, { timeoutMs: 30_000, intervalMs: 200, what: 'a capture after resume' });

  // Delete: gone for good.
  const del = await h.app.inject({ method: 'DELETE', url: '/v1/schedules/app-2s', headers: auth('runbook') });
  assert.equal(del.statusCode, 204, del.body);
  assert.deepEqual(await schedulerIds(q), []);
  assert.equal((await h.app.inject({ method: 'GET', url: '/v1/schedules/app-2s', headers: auth('reader') })).statusCode, 404);
  await settled(q, 'app-2s');
  await assertQuiet(q, 'app-2s', 7_000, 'deleted');
  const audit = (await q.audit.recent(100)).map((e) => e.action);
  for (const a of ['schedule.create', 'schedule.update', 'schedule.pause', 'schedule.resume', 'schedule.delete']) assert.ok(audit.includes(a), `audit has ${a}: ${audit.join(', ')}`);
});

void test('a group of three, every 6s, maxConcurrent 1: each target once per interval, starts spread, never two at once', async () => {
  h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 3 }, schedules: {} });
  const group = ['grp-a', 'grp-b', 'grp-c'];
  for (const id of group) await h.world.addTarget(id, 2, { service: 'grp' });
  await h.world.addTarget('bystander', 2, { service: 'other' });
  const q = h.queue;
  const res = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'grp', selector: { service: 'grp' }, every: '6s', maxConcurrent: 1 } });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.json<View>().matches, 3);

  // Two full runs.
  await waitFor(async () => (await scheduleCaptures(q, 'grp')).length >= 6, { timeoutMs: 90_000, intervalMs: 200, what: 'six captures of the group' });
  await h.app.inject({ method: 'POST', url: '/v1/schedules/grp/pause', headers: auth('runbook') });
  const all = await settled(q, 'grp');
  const runs = [all.slice(0, 3), all.slice(3, 6)];
  for (const run of runs) {
    assert.deepEqual(run.map((r) => r.targetId).sort(), group, `each target once per run: ${run.map((r) => `${r.targetId}@${r.createdAt}`).join(', ')}`);
    for (const r of run) assert.equal(r.status, 'succeeded', JSON.stringify(r.error));
  }
  assert.ok(!all.some((r) => r.targetId === 'bystander'));
  // Runs are an interval apart; within a run the members are spread over it (offsets 0, 2, 4 s).
  const runGap = Date.parse(runs[1]![0]!.createdAt) - Date.parse(runs[0]![0]!.createdAt);
  assert.ok(runGap >= 5_000 && runGap <= 7_500, `runs ${runGap} ms apart`);
  const started = all.slice(0, 6).map((r) => ({ id: r.targetId, start: Date.parse(r.startedAt ?? ''), end: Date.parse(r.finishedAt ?? '') })).sort((a, b) => a.start - b.start);
  for (let i = 1; i < started.length; i++) {
    const [prev, cur] = [started[i - 1]!, started[i]!];
    assert.ok(cur.start - prev.start >= 1_000, `starts ${cur.start - prev.start} ms apart: ${JSON.stringify(started)}`);
    assert.ok(cur.start >= prev.end, `two at once: ${prev.id} ran until ${prev.end}, ${cur.id} started ${cur.start}`);
  }
  // Turns are counted by outcome.
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  const created = Number(/heapcap_schedule_runs_total\{outcome="created"\} (\d+)/.exec(metrics)?.[1]);
  assert.ok(created >= 6, metrics);
  assert.match(metrics, /heapcap_schedules\{state="paused"\} 1/);
});

void test('a schedule worker that takes no jobs (a BullMQ worker wedged after a Redis restart) is replaced, and the runs go on', async () => {
  h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 1 }, schedules: { reconcileIntervalMs: 500, overdueMs: 1_000 } });
  await h.world.addTarget('app', 2);
  const scheduler = h.scheduler!;
  // What run L saw after a Redis Cluster master restarted: the worker is up but fetches nothing.
  await scheduler.bullWorker!.pause(true);
  const wedged = scheduler.bullWorker;
  const created = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'wedge', target: 'app', every: '1s' } });
  assert.equal(created.statusCode, 201, created.body);
  // Two passes see the run waiting with nothing taken: the second replaces the BullMQ worker.
  await waitFor(() => scheduler.replaced > 0, { timeoutMs: 30_000, what: 'the schedule worker replaced' });
  assert.notEqual(scheduler.bullWorker, wedged);
  assert.ok(h.logs.lines.some((l) => l.includes('this schedule worker takes no jobs: replacing its BullMQ worker and connection')), h.logs.lines.join('\n'));
  const captures = await waitFor(async () => ((await scheduleCaptures(h!.queue, 'wedge')).length > 0 ? true : undefined), { timeoutMs: 30_000, what: 'a scheduled capture after the replacement' });
  assert.ok(captures);
  // The new worker keeps taking the runs.
  await waitFor(async () => ((await scheduleCaptures(h!.queue, 'wedge')).length >= 3 ? true : undefined), { timeoutMs: 30_000, what: 'three scheduled captures' });
});

void test('a schedule worker started with runs already overdue (after a downtime) takes them, and is not replaced', async () => {
  h = await startHarness({ redisUrl: redis.url, env: FAST, worker: { concurrency: 1 } });
  await h.world.addTarget('app', 2);
  const created = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'late', target: 'app', every: '1s' } });
  assert.equal(created.statusCode, 201, created.body);
  // No schedule worker yet: the first run waits past the overdue mark.
  const t0 = Date.now();
  await waitFor(() => (Date.now() - t0 > 1_500 ? true : undefined), { timeoutMs: 5_000, intervalMs: 100, what: 'the run overdue' });
  const config = parseConfig({ HEAPCAP_LOG_LEVEL: 'info', HEAPCAP_REDIS_URL: redis.url, ...FAST });
  const scheduler = new ScheduleWorker({ queue: h.queue, store: h.sink, log: h.logs.logger.child({ component: 'schedules' }), settings: config.schedules, tuning: { reconcileIntervalMs: 60_000, overdueMs: 1_000 } });
  try {
    // The start's own pass sees the run overdue before the worker exists: the worker it starts takes it.
    await scheduler.start();
    assert.equal(scheduler.replaced, 0);
    await waitFor(async () => ((await scheduleCaptures(h!.queue, 'late')).length > 0 ? true : undefined), { timeoutMs: 30_000, what: 'the overdue run taken' });
  } finally {
    await scheduler.close();
  }
});
