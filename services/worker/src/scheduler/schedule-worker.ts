/**
 * The consumer of `heapcap-schedules`: schedule runs (planned into member
 * jobs; a one-target schedule's run takes its turn itself), member turns (a
 * capture made, joined or skipped) and retention runs.
 * Every `heapcap worker` and `heapcap serve` runs one; BullMQ hands each job
 * to one of them, and its job schedulers make each run happen once, whichever
 * replicas are up. It also keeps the schedulers in step with the definitions
 * (at start and every `reconcileIntervalMs`) and upserts the janitor's.
 *
 * A BullMQ worker can stop taking jobs after its Redis comes back while its
 * connection reports ready (run L: after a Redis Cluster master restarted, both
 * serves' schedule workers took nothing for 90 s, with a run waiting and the
 * janitor's delayed, while their capture workers went on; BullMQ #4138 and
 * #4479 describe the same). The reconcile pass sees that: a run overdue with
 * its job waiting or delayed, while this process has a free slot and took no
 * job since the previous pass, means this worker does not fetch (a fetching
 * one takes a waiting job within milliseconds, and keeps taking jobs through a
 * backlog). It then replaces the BullMQ worker and its connection.
 *
 * `close()` is idempotent and runs every step even if one fails: stop the
 * reconcile timer, stop taking jobs (running ones get `closeTimeoutMs`), close
 * the connection.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ScheduleSettings } from '@heapcap/config';
import { closeWorker, duplicateRedis, type HeapcapQueue } from '@heapcap/state';
import { MemberJobSchema, RETENTION_JOB, SCHEDULE_MEMBER_JOB, SCHEDULE_QUEUE, SCHEDULE_RUN_JOB, ScheduleRunJobSchema, scheduledTimeOf, SCHEDULER_OVERDUE_MS, type LastRun } from '@heapcap/state/schedules';
import { Janitor, type ArtifactRemover } from '@heapcap/state/retention';
import type { ArtifactStore } from '@heapcap/storage';
import { adoptAfterLoss } from './adopt.ts';

/** How the schedule worker runs; every field has a default. */
export interface ScheduleWorkerTuning {
  /** Jobs of this queue in flight in this process (they are short: Redis and registry work, deletions). */
  concurrency: number;
  /** Check schedulers against definitions this often (and at start). */
  reconcileIntervalMs: number;
  /** A turn waiting for its group (or the admission lock) tries again after this (plus up to 50 % jitter). */
  turnRetryMs: number;
  /** Shutdown: running jobs get this long. */
  closeTimeoutMs: number;
  /** A run this late is overdue: healed when its job is gone, and its worker replaced when the job waits. */
  overdueMs: number;
}

export const DEFAULT_SCHEDULE_TUNING: ScheduleWorkerTuning = {
  concurrency: 4,
  reconcileIntervalMs: 30_000,
  turnRetryMs: 500,
  closeTimeoutMs: 10_000,
  overdueMs: SCHEDULER_OVERDUE_MS,
};

export interface ScheduleWorkerDeps {
  queue: HeapcapQueue;
  /** Where the janitor deletes artifacts, and finds the captures whose records Redis lost (the service's artifact store). */
  store: ArtifactRemover & Pick<ArtifactStore, 'listManifests' | 'open'>;
  log: Logger;
  settings: ScheduleSettings;
  tuning?: Partial<ScheduleWorkerTuning> | undefined;
}

type State = 'created' | 'running' | 'closing' | 'closed';

/** Runs schedules and the retention janitor in this process. */
export class ScheduleWorker {
  readonly tuning: ScheduleWorkerTuning;
  readonly janitor: Janitor;
  readonly #deps: ScheduleWorkerDeps;
  readonly #log: Logger;
  #state: State = 'created';
  #worker: Worker | undefined;
  #connection: HeapcapQueue['redis'] | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  /** Jobs of this process running now, and taken since the start. */
  #running = 0;
  #taken = 0;
  /** {@link #taken} at the last reconcile pass. */
  #takenAtLastPass = 0;
  /** A replacement of the BullMQ worker in flight (close waits for it). */
  #replacing: Promise<void> | undefined;
  /** How many times the BullMQ worker was replaced because it took no jobs. */
  #replaced = 0;

  constructor(deps: ScheduleWorkerDeps) {
    this.#deps = deps;
    this.tuning = { ...DEFAULT_SCHEDULE_TUNING, ...deps.tuning };
    this.#log = deps.log;
    const s = deps.settings;
    this.janitor = new Janitor({
      queue: deps.queue,
      store: deps.store,
      log: deps.log.child({ component: 'retention' }),
      defaults: { keepLast: s.keepLast, maxAgeDays: s.maxAgeDays, recordTtlMs: s.recordTtlMs },
    });
  }

  /** Where the worker is in its life. */
  get state(): State {
    return this.#state;
  }

  /** The BullMQ worker taking this process's schedule jobs now (replaced when it stops taking them). */
  get bullWorker(): Worker | undefined {
    return this.#worker;
  }

  /** How many times the BullMQ worker was replaced because it took no jobs. */
  get replaced(): number {
    return this.#replaced;
  }

  /** Upsert the janitor's scheduler, reconcile schedulers, start taking jobs. */
  async start(): Promise<void> {
    if (this.#state !== 'created') throw new Error(`cannot start a schedule worker that is ${this.#state}`);
    this.#state = 'running';
    const { queue } = this.#deps;
    await queue.schedules.ensureJanitor(this.#deps.settings.retentionIntervalMs);
    await this.#reconcile();
    this.#timer = setInterval(() => void this.#reconcile(), this.tuning.reconcileIntervalMs);
    this.#timer.unref();
    await this.#startWorker();
    this.#log.info({ queue: SCHEDULE_QUEUE, retentionIntervalMs: this.#deps.settings.retentionIntervalMs }, 'schedule worker started');
  }

  /** A BullMQ worker on a connection of its own, taking jobs. */
  async #startWorker(): Promise<void> {
    const { queue } = this.#deps;
    const connection = duplicateRedis(queue.redis, { maxRetriesPerRequest: null, connectionName: `${queue.keys.prefix}:schedules` });
    connection.on('error', () => {});
    this.#connection = connection;
    const worker = new Worker(
      SCHEDULE_QUEUE,
      async (job, token) => {
        this.#running++;
        this.#taken++;
        try {
          await this.#process(job, token ?? '');
        } finally {
          this.#running--;
        }
      },
      { connection, prefix: queue.keys.prefix, concurrency: this.tuning.concurrency, autorun: false },
    );
    worker.on('error', (err) => this.#log.warn({ err }, 'schedule worker connection error'));
    worker.on('failed', (job, err) => {
      if (job !== undefined) this.#log.warn({ jobId: job.id, job: job.name, err: err.message }, 'schedule job failed');
    });
    this.#worker = worker;
    void worker.run().catch((err: unknown) => this.#log.error({ err }, 'schedule worker stopped unexpectedly'));
    await worker.waitUntilReady();
  }

  /** Close the BullMQ worker that takes no jobs and its connection, and start a new one (unless closing). */
  async #replaceWorker(): Promise<void> {
    const [worker, connection] = [this.#worker, this.#connection];
    if (worker !== undefined) await closeWorker(worker, { graceMs: this.tuning.closeTimeoutMs }).catch(() => undefined);
    connection?.disconnect();
    if (this.#state !== 'running') return;
    await this.#startWorker();
    this.#replaced++;
  }

  async #reconcile(): Promise<void> {
    try {
      // Redis may have lost its data since the start (issue 25 defect 4): the janitor's scheduler went with it.
      await this.#deps.queue.schedules.ensureJanitor(this.#deps.settings.retentionIntervalMs);
      const report = await this.#deps.queue.schedules.reconcile(Date.now(), this.tuning.overdueMs);
      if (report.added.length + report.removed.length + report.healed.length > 0) this.#log.warn(report, 'job schedulers reconciled with the schedules');
      const waiting = report.overdue.filter((o) => o.state !== 'active');
      const tookNone = this.#taken === this.#takenAtLastPass;
      this.#takenAtLastPass = this.#taken;
      // Not at start (the first pass runs before the worker exists: runs overdue after a downtime are its first jobs).
      const fetching = this.#worker !== undefined && this.#replacing === undefined && this.#state === 'running';
      if (waiting.length > 0 && tookNone && fetching && this.#running < this.tuning.concurrency) {
        // Runs wait, this process has a free slot and took no job since the last pass: its BullMQ worker does
        // not fetch. (A backlog at scale keeps runs waiting too, but a fetching worker takes jobs meanwhile.)
        this.#log.warn({ overdue: waiting, running: this.#running }, 'scheduled runs are overdue and this schedule worker takes no jobs: replacing its BullMQ worker and connection');
        this.#replacing = this.#replaceWorker().finally(() => (this.#replacing = undefined));
        await this.#replacing;
      } else if (report.overdue.length > 0) {
        this.#log.warn({ overdue: report.overdue, running: this.#running }, 'scheduled runs are overdue');
      }
    } catch (err) {
      this.#log.warn({ err }, 'scheduler reconcile failed; will try again');
    }
  }

  async #process(job: Job, token: string): Promise<void> {
    const { queue } = this.#deps;
    switch (job.name) {
      case SCHEDULE_RUN_JOB: {
        const data = ScheduleRunJobSchema.safeParse(job.data);
        if (!data.success) throw new UnrecoverableError('invalid_input: bad schedule-run payload');
        const runAt = scheduledTimeOf({ id: job.id, timestamp: job.timestamp, delay: job.opts.delay });
        const plan = await queue.planScheduleRun(data.data.scheduleId, runAt);
        const log = this.#log.child({ scheduleId: data.data.scheduleId, runAt: new Date(runAt).toISOString() });
        if (plan.kind === 'planned') log.info({ members: plan.members, intervalMs: plan.intervalMs }, 'schedule run planned');
        else if (plan.kind === 'taken' && plan.again) log.info({ outcome: plan.turn.outcome, captureId: plan.turn.captureId }, 'schedule run taken already: its turn is recorded');
        else if (plan.kind === 'taken') this.#logTurn(log.child({ targetId: plan.turn.targetId }), plan.turn);
        else if (plan.kind === 'empty') log.warn({ turn: plan.turn }, 'schedule run skipped: no target matches');
        else log.info('schedule run of a deleted or paused schedule: scheduler removed');
        return;
      }
      case SCHEDULE_MEMBER_JOB: {
        const parsed = MemberJobSchema.safeParse(job.data);
        if (!parsed.success) throw new UnrecoverableError('invalid_input: bad schedule member payload');
        const member = parsed.data;
        const result = await queue.takeScheduleTurn(member);
        const log = this.#log.child({ scheduleId: member.scheduleId, targetId: member.targetId, runAt: new Date(member.runAt).toISOString() });
        if (result.kind === 'wait') {
          if (result.why === 'group_busy' && member.waited === undefined) await job.updateData({ ...member, waited: 'group_busy' });
          const delay = Math.round(this.tuning.turnRetryMs * (1 + Math.random() * 0.5));
          log.debug({ why: result.why, delayMs: delay }, 'schedule turn waits');
          await job.moveToDelayed(Date.now() + delay, token);
          throw new DelayedError();
        }
        if (result.kind === 'done') this.#logTurn(log, result.turn);
        return;
      }
      case RETENTION_JOB: {
        const report = await this.janitor.run();
        if (!report.ran) this.#log.debug('retention run skipped: another process is running one');
        // After Redis lost its data: the stored captures whose records went with it (once per loss).
        await adoptAfterLoss({ queue: this.#deps.queue, store: this.#deps.store, log: this.#log.child({ component: 'retention' }) });
        return;
      }
      default:
        throw new UnrecoverableError(`invalid_input: unknown job ${job.name}`);
    }
  }

  #logTurn(log: Logger, t: LastRun): void {
    log.info({ outcome: t.outcome, captureId: t.captureId, reason: t.reason }, `schedule turn: ${t.outcome}`);
  }

  /** Stop within the close timeout; idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#state = 'closing';
    const steps: [string, () => Promise<unknown>][] = [
      ['stop reconciler', async () => clearInterval(this.#timer)],
      // A replacement in flight starts no worker once closing; the one it started (if any) is stopped next.
      ['wait for a replacement', async () => this.#replacing],
      ['stop taking jobs', () => this.#stopWorker()],
      ['close connection', async () => this.#connection?.disconnect()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        this.#log.warn({ err, step: name }, 'schedule worker shutdown step failed; continuing');
      }
    }
    this.#state = 'closed';
  }

  async #stopWorker(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    // A job still running is picked up again by another process (BullMQ's stalled check).
    await closeWorker(worker, { graceMs: this.tuning.closeTimeoutMs });
  }
}
