/**
 * Schedules across `heapcap serve` processes (bin/heapcap, one Redis): two
 * processes upserting the same schedule make one job scheduler and one capture
 * per run; a process killed with SIGKILL for 10 s and restarted resumes the
 * schedule without a burst of catch-up runs (BullMQ runs one overdue
 * iteration, then continues from now).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { createQueue, type CaptureRecord, type HeapcapQueue } from '@heapcap/state';
import { JANITOR_SCHEDULER_ID, scheduledTimeOf } from '@heapcap/state/schedules';
import { fixturePath, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let target: NodeTarget;
let dir: TmpDir;
let queue: HeapcapQueue;
const serves: RunningHeapcap[] = [];

before(async () => {
  [redis, target, dir] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } }), tmpDir('heapcap-sched-proc')]);
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: app\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: app }\n`);
  // `heapcap serve` uses the default key prefix.
  queue = createQueue({ redisUrl: redis.url });
});
after(async () => {
  await Promise.allSettled(serves.map((s) => s.stop('SIGKILL')));
  await queue?.close();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** A `heapcap serve --dev` on the shared Redis, with the minimum interval lowered for seconds-scale tests. */
async function serve(): Promise<RunningHeapcap> {
  const s = await startDevServe(dir.path, redis.url, { HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s' });
  serves.push(s);
  return s;
}

async function put(s: RunningHeapcap, id: string, body: object): Promise<number> {
  const res = await fetch(`${s.url}/v1/schedules/${id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  assert.ok(res.status === 200 || res.status === 201, `${res.status} ${await res.text()}`);
  return res.status;
}

async function capturesOf(id: string): Promise<CaptureRecord[]> {
  const page = await queue.listCaptures({ triggerKind: 'schedule', limit: 100 });
  return page.items.filter((r) => r.trigger.scheduleId === id).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The `schedule-run` jobs of schedule `id` that ran: when each was due and when it was processed. */
async function runsOf(id: string): Promise<{ due: number; processedOn: number }[]> {
  const jobs = await queue.schedules.bull.getJobs(['completed', 'failed', 'active']);
  return jobs
    .filter((j) => j.name === 'schedule-run' && (j.data as { scheduleId?: string }).scheduleId === id && j.processedOn !== undefined)
    .map((j) => ({ due: scheduledTimeOf({ id: j.id, timestamp: j.timestamp, delay: j.opts.delay }), processedOn: j.processedOn! }))
    .sort((a, b) => a.due - b.due);
}

async function schedulers(): Promise<string[]> {
  return (await queue.schedules.bull.getJobSchedulers(0, -1, true)).map((s) => s.key).sort();
}

void test('two serve processes upserting the same schedule: one scheduler, one capture per run', async () => {
  const [a, b] = await Promise.all([serve(), serve()]);
  const body = { target: 'app', every: '3s' };
  const statuses = await Promise.all([put(a, 'twice', body), put(b, 'twice', body)]);
  assert.deepEqual(statuses.sort(), [200, 201], 'one created it, the other replaced it');
  assert.deepEqual(await schedulers(), [JANITOR_SCHEDULER_ID, 'twice'], 'one scheduler for the schedule (and one janitor)');
  // Both processes upsert again, as a redeploy would.
  await Promise.all([put(a, 'twice', body), put(b, 'twice', body)]);

  const runs = await waitFor(async () => {
    const r = await runsOf('twice');
    return r.length >= 5 ? r : undefined;
  }, { timeoutMs: 90_000, intervalMs: 250, what: 'five runs' });
  assert.deepEqual(await schedulers(), [JANITOR_SCHEDULER_ID, 'twice']);
  await Promise.all([a.stop(), b.stop()]);
  const all = await capturesOf('twice');
  // Each run ran once: distinct due times, each an interval (or a whole number of them) after the last.
  const dues = runs.map((r) => r.due);
  assert.equal(new Set(dues).size, dues.length, `a run ran twice: ${JSON.stringify(runs)}`);
  for (let i = 1; i < dues.length; i++) assert.ok(dues[i]! - dues[i - 1]! >= 2_900, `runs due ${dues[i]! - dues[i - 1]!} ms apart`);
  // One capture per run at most (a run that finds the last one still running joins it).
  assert.ok(all.length >= 2 && all.length <= runs.length + 1, `${all.length} captures for ${runs.length} runs`);
  const created = all.map((r) => Date.parse(r.createdAt));
  for (let i = 1; i < created.length; i++) assert.ok(created[i]! - created[i - 1]! >= 2_000, `captures created ${created[i]! - created[i - 1]!} ms apart: ${JSON.stringify(all.map((r) => r.createdAt))}`);
  // Paused for the next test: no process may run it (nor any other schedule) behind its back.
  const c = await serve();
  await put(c, 'twice', { ...body, enabled: false });
  await c.stop();
});

void test('serve killed with SIGKILL for 10 s and restarted: the schedule resumes without a burst of catch-up runs', async () => {
  const first = await serve();
  await put(first, 'survivor', { target: 'app', every: '2s' });
  await waitFor(async () => (await runsOf('survivor')).length >= 2, { timeoutMs: 60_000, intervalMs: 250, what: 'two runs' });
  // Kill it between captures where possible (a capture killed mid-way is joined by later runs until BullMQ recovers it).
  await waitFor(async () => (await capturesOf('survivor')).every((r) => r.status !== 'queued' && r.status !== 'running'), { timeoutMs: 30_000, intervalMs: 100, what: 'an idle moment' });
  await first.stop('SIGKILL');
  const killedAt = Date.now();
  const before = (await runsOf('survivor')).length;
  await sleep(10_000); // the outage
  const restartedAt = Date.now();
  const second = await serve();

  const resumed = await waitFor(async () => {
    const r = (await runsOf('survivor')).filter((x) => x.processedOn >= restartedAt);
    return r.length >= 3 ? r : undefined;
  }, { timeoutMs: 60_000, intervalMs: 250, what: 'runs after the restart' });
  const windowEnd = resumed[2]!.processedOn;
  await second.stop();
  const all = await runsOf('survivor');
  const missed = all.filter((r) => r.due > killedAt && r.due < restartedAt);
  // Five runs fell due during the outage; BullMQ ran at most the one it had queued.
  assert.ok(missed.length <= 1, `catch-up runs: ${JSON.stringify(missed)}`);
  assert.equal(all.length, before + missed.length + all.filter((r) => r.due >= restartedAt).length);
  const after = all.filter((r) => r.processedOn >= restartedAt && r.processedOn <= windowEnd);
  const span = windowEnd - restartedAt;
  assert.ok(after.length <= Math.floor(span / 2_000) + 2, `${after.length} runs in the ${span} ms after the restart: ${JSON.stringify(after)}`);
  const created = (await capturesOf('survivor')).filter((r) => Date.parse(r.createdAt) >= restartedAt).map((r) => Date.parse(r.createdAt));
  for (let i = 1; i < created.length; i++) assert.ok(created[i]! - created[i - 1]! >= 1_000, `a burst: captures ${created[i]! - created[i - 1]!} ms apart`);
});
