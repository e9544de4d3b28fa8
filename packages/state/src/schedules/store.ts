/**
 * Schedules in Redis: the definitions (one hash, id → JSON), the last turn of
 * each (another hash), and their BullMQ job schedulers, kept in step: an
 * enabled schedule has exactly one scheduler, a paused or deleted one none.
 * Saving the definition and upserting the scheduler are two writes; the
 * worker's reconcile pass (and every run, which checks the definition) heals
 * a crash between them.
 */
import { Queue } from 'bullmq';
import type { QueueContext } from '../context.ts';
import { withRedisDeadline } from '../connection.ts';
import { LuaScript } from '../script.ts';
import { FINISHED_JOBS, JANITOR_SCHEDULER_ID, memberJobId, RETENTION_JOB, SCHEDULE_MEMBER_JOB, SCHEDULE_QUEUE, SCHEDULE_RUN_JOB, type MemberJob } from './jobs.ts';
import { LastRunSchema, RUN_OUTCOMES, ScheduleSchema, type LastRun, type RunOutcome, type Schedule } from './schema.ts';

/** A member job to add, and how long after now it starts. */
export interface MemberToAdd {
  job: MemberJob;
  delayMs: number;
}

/** A schedule's last turn, and the id of its last capture (a skip keeps the one before). */
export interface ScheduleRunState {
  lastRun: LastRun;
  lastCaptureId: string | null;
}

/** What a reconcile pass changed. */
export interface SchedulerReconcileReport {
  /** Enabled schedules that had no scheduler: upserted. */
  added: string[];
  /** Schedulers without an enabled schedule: removed. */
  removed: string[];
  /**
   * Schedulers whose next run was due more than `overdueMs` ago and whose job for it is gone (BullMQ
   * schedules the next iteration in a separate call after a run starts; a process or connection lost in
   * between leaves the scheduler waiting for ever): upserted again, which makes the run now.
   */
  healed: string[];
  /** Schedulers whose next run is overdue while its job is still there (no worker takes it): reported, left alone. */
  overdue: { id: string; lateMs: number; state: string }[];
}

/** A scheduler's run this late, its job gone, is healed by the reconcile pass (the pass runs every 30 s). */
export const SCHEDULER_OVERDUE_MS = 15_000;

const counterField = (outcome: RunOutcome): string => `schedule_runs|${outcome}`;

/** The field of the last-runs hash that holds the id of a schedule's last capture (made or joined). */
const lastCaptureField = (scheduleId: string): string => `${scheduleId}|capture`;

/**
 * KEYS: 1 counters hash, 2 definitions, 3 last runs.
 * ARGV: 1 counter field, 2 schedule id, 3 turn JSON, 4 last-capture field, 5 capture id ('' for a skip).
 * A turn that ends after its schedule was deleted counts, but leaves no state behind.
 */
const RECORD_TURN = new LuaScript(`
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
  if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[4], ARGV[5]) end
end
return 1
`);

/** Definitions, last turns and job schedulers of every schedule. */
export class ScheduleStore {
  readonly #ctx: QueueContext;
  /** The producer of `heapcap-schedules` (schedulers, member jobs). */
  readonly bull: Queue;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
    this.bull = new Queue(SCHEDULE_QUEUE, { connection: ctx.redis, prefix: ctx.keys.prefix });
    this.bull.on('error', () => {});
  }

  #deadline<T>(p: Promise<T>, what: string): Promise<T> {
    return withRedisDeadline(p, this.#ctx.settings.redisTimeoutMs, what);
  }

  /** One schedule, or null. */
  async get(id: string): Promise<Schedule | null> {
    const v = await this.#deadline(this.#ctx.redis.hget(this.#ctx.keys.schedules(), id), 'schedule get');
    return v === null ? null : ScheduleSchema.parse(JSON.parse(v));
  }

  /** A schedule and its last turn, in one round trip (a run reads both). */
  async getWithLastRun(id: string): Promise<{ schedule: Schedule | null; lastRun: LastRun | null }> {
    const { keys, redis } = this.#ctx;
    const replies = await this.#deadline(redis.pipeline().hget(keys.schedules(), id).hget(keys.scheduleRuns(), id).exec(), 'schedule get');
    const [[defErr, def], [runErr, run]] = replies as [[Error | null, string | null], [Error | null, string | null]];
    if (defErr !== null) throw defErr;
    if (runErr !== null) throw runErr;
    // A last turn this build cannot read only loses the retry guard; it must not stop the run.
    const last = run === null ? undefined : LastRunSchema.safeParse(safeJson(run));
    return { schedule: def === null ? null : ScheduleSchema.parse(JSON.parse(def)), lastRun: last?.success === true ? last.data : null };
  }

  /** Every schedule, sorted by id. */
  async list(): Promise<Schedule[]> {
    const all = await this.#deadline(this.#ctx.redis.hgetall(this.#ctx.keys.schedules()), 'schedules list');
    return Object.values(all)
      .map((v) => ScheduleSchema.parse(JSON.parse(v)))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Store `schedule` (create or replace) and make its scheduler match `enabled`; `created` is false for a replacement. */
  async put(schedule: Schedule): Promise<{ created: boolean }> {
    const parsed = ScheduleSchema.parse(schedule);
    const added = await this.#deadline(this.#ctx.redis.hset(this.#ctx.keys.schedules(), parsed.id, JSON.stringify(parsed)), 'schedule put');
    await this.syncScheduler(parsed);
    return { created: added === 1 };
  }

  /** Delete a schedule: its scheduler first (no run starts after this), then its definition, last turn and capture index. */
  async remove(id: string): Promise<boolean> {
    await this.#deadline(this.bull.removeJobScheduler(id), 'scheduler remove');
    const { keys } = this.#ctx;
    const [[, n]] = (await this.#deadline(
      this.#ctx.redis.multi().hdel(keys.schedules(), id).hdel(keys.scheduleRuns(), id, lastCaptureField(id)).del(keys.indexSchedule(id)).exec(),
      'schedule delete',
    )) as [[unknown, number]];
    return n === 1;
  }

  /** Upsert the job scheduler of an enabled schedule, remove that of a paused one. */
  async syncScheduler(schedule: Schedule): Promise<void> {
    if (!schedule.enabled) {
      await this.#deadline(this.bull.removeJobScheduler(schedule.id), 'scheduler remove');
      return;
    }
    const repeat = schedule.everyMs !== undefined ? { every: schedule.everyMs } : { pattern: schedule.cron ?? '', tz: schedule.timezone ?? 'UTC' };
    await this.#deadline(
      this.bull.upsertJobScheduler(schedule.id, repeat, { name: SCHEDULE_RUN_JOB, data: { scheduleId: schedule.id }, opts: FINISHED_JOBS }),
      'scheduler upsert',
    );
  }

  /** When the scheduler of `id` next runs (ms), or undefined when it has none. */
  async schedulerNext(id: string): Promise<number | undefined> {
    const s = await this.#deadline(this.bull.getJobScheduler(id), 'scheduler get');
    return s?.next ?? undefined;
  }

  /** Job schedulers in Redis (schedules and the janitor). */
  schedulerCount(): Promise<number> {
    return this.#deadline(this.bull.getJobSchedulersCount(), 'scheduler count');
  }

  /**
   * Make schedulers match definitions: add the missing ones of enabled schedules, remove orphans, and
   * heal the ones whose next run's job is gone (see {@link SchedulerReconcileReport.healed}).
   */
  async reconcile(now = Date.now(), overdueMs = SCHEDULER_OVERDUE_MS): Promise<SchedulerReconcileReport> {
    const [schedules, schedulers] = await Promise.all([this.list(), this.#deadline(this.bull.getJobSchedulers(0, -1, true), 'schedulers list')]);
    const enabled = new Map(schedules.filter((s) => s.enabled).map((s) => [s.id, s]));
    const present = new Set(schedulers.map((s) => s.key));
    const report: SchedulerReconcileReport = { added: [], removed: [], healed: [], overdue: [] };
    for (const [id, s] of enabled) {
      if (present.has(id)) continue;
      await this.syncScheduler(s);
      report.added.push(id);
    }
    // At most 200 looked up a pass: with a backlog at scale many runs are late with their jobs waiting.
    const late = schedulers.filter((x) => x.next !== undefined && x.next <= now - overdueMs).slice(0, 200);
    for (const scheduler of late) {
      const next = scheduler.next!;
      const job = await this.#deadline(this.bull.getJob(`repeat:${scheduler.key}:${next}`), 'scheduler job get');
      const state = job === undefined ? 'missing' : await this.#deadline(job.getState(), 'scheduler job state');
      if (state === 'delayed' || state === 'waiting' || state === 'active' || state === 'prioritized') {
        report.overdue.push({ id: scheduler.key, lateMs: now - next, state });
        continue;
      }
      // A worker may have just run it and scheduled the next one: only a scheduler still at that run is healed.
      const current = await this.#deadline(this.bull.getJobScheduler(scheduler.key), 'scheduler get');
      if (current?.next !== next) continue;
      // Upserting again computes the next run from now and adds its job.
      const s = enabled.get(scheduler.key);
      if (s !== undefined) await this.syncScheduler(s);
      else if (scheduler.key === JANITOR_SCHEDULER_ID && scheduler.every !== undefined && scheduler.every !== null) await this.#upsertJanitor(Number(scheduler.every));
      else continue;
      report.healed.push(scheduler.key);
    }
    for (const id of present) {
      if (id === JANITOR_SCHEDULER_ID || enabled.has(id)) continue;
      await this.#deadline(this.bull.removeJobScheduler(id), 'scheduler remove');
      report.removed.push(id);
    }
    return report;
  }

  /** Make sure the janitor's scheduler exists with this interval (one across every replica; an unchanged upsert keeps its timing). */
  async ensureJanitor(everyMs: number): Promise<void> {
    const current = await this.#deadline(this.bull.getJobScheduler(JANITOR_SCHEDULER_ID), 'scheduler get');
    if (current?.every === everyMs) return;
    await this.#upsertJanitor(everyMs);
  }

  async #upsertJanitor(everyMs: number): Promise<void> {
    await this.#deadline(this.bull.upsertJobScheduler(JANITOR_SCHEDULER_ID, { every: everyMs }, { name: RETENTION_JOB, data: {}, opts: FINISHED_JOBS }), 'janitor scheduler upsert');
  }

  /** Add a run's member jobs (idempotent: one job id per schedule, run and target). */
  async addMembers(members: MemberToAdd[]): Promise<void> {
    if (members.length === 0) return;
    await this.#deadline(
      this.bull.addBulk(
        members.map(({ job, delayMs }) => ({
          name: SCHEDULE_MEMBER_JOB,
          data: job,
          opts: { jobId: memberJobId(job), delay: Math.max(0, Math.round(delayMs)), attempts: 3, backoff: { type: 'exponential', delay: 1_000 }, ...FINISHED_JOBS },
        })),
      ),
      'add member jobs',
    );
  }

  /** Record a turn: the cluster-wide outcome counter, and the schedule's last run (only while it exists). */
  async recordTurn(scheduleId: string, turn: LastRun): Promise<void> {
    const { keys, redis } = this.#ctx;
    await this.#deadline(
      RECORD_TURN.run(
        redis,
        [keys.counters(), keys.schedules(), keys.scheduleRuns()],
        [counterField(turn.outcome), scheduleId, JSON.stringify(LastRunSchema.parse(turn)), lastCaptureField(scheduleId), turn.captureId ?? ''],
      ),
      'record turn',
    );
  }

  /** The last turn and the last capture (made or joined) of every schedule that has run. */
  async lastRuns(): Promise<Map<string, ScheduleRunState>> {
    const all = await this.#deadline(this.#ctx.redis.hgetall(this.#ctx.keys.scheduleRuns()), 'last runs');
    const out = new Map<string, ScheduleRunState>();
    for (const [field, v] of Object.entries(all)) {
      if (field.endsWith('|capture')) continue;
      out.set(field, { lastRun: LastRunSchema.parse(JSON.parse(v)), lastCaptureId: all[lastCaptureField(field)] ?? null });
    }
    return out;
  }

  /** Turns by outcome since Redis was created (cluster-wide). */
  async runCounts(): Promise<Record<RunOutcome, number>> {
    const values = await this.#deadline(this.#ctx.redis.hmget(this.#ctx.keys.counters(), ...RUN_OUTCOMES.map(counterField)), 'run counters');
    return Object.fromEntries(RUN_OUTCOMES.map((o, i) => [o, Number(values[i] ?? 0)])) as Record<RunOutcome, number>;
  }

  /** Close the producer (the connection is the queue's). */
  async close(): Promise<void> {
    await this.bull.close();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
