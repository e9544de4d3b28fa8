/** HeapcapQueue: the one object the api and the worker hold; see index.ts for the API summary. */
import { isClusterRedisUrl } from '@heapcap/config';
import { Queue } from 'bullmq';
import { CaptureAnalyses } from './analyses.ts';
import { LeakHunts } from './leak-hunts.ts';
import { AttemptRecorder } from './attempts.ts';
import { HeadroomHistory } from './headroom-history.ts';
import { AuditLog } from './audit.ts';
import { readFinishedMetrics, type FinishedMetrics } from './finished-metrics.ts';
import { cancelCapture, type CancelResult } from './cancel.ts';
import { closeRedis, createRedis, withRedisDeadline, type RedisClient } from './connection.ts';
import type { QueueContext, QueueSettings } from './context.ts';
import { CaptureEvents } from './events.ts';
import { effectivePrefix, Keys } from './keys.ts';
import { RedisEpoch } from './redis-epoch.ts';
import { TargetLocks } from './locks.ts';
import { getCapture, listCaptures, previousSummary, type CapturePage, type ListCapturesFilter } from './records.ts';
import { TargetRegistry } from './registry.ts';
import { requestCapture, type RequestCaptureInput, type RequestCaptureResult } from './requests.ts';
import { CAPTURE_QUEUE, CAPTURE_STATUSES, type CaptureJob, type CaptureRecord, type CaptureStatus, type Target } from './schemas.ts';
import { isTerminal, waitForCapture } from './wait.ts';
import { captureQueueName, coversPlacement } from './routing.ts';
import { WorkerDirectory } from './workers.ts';
import { noWorkerError } from './no-worker.ts';
import { setPin, type PinOutcome } from './retention/pins.ts';
import type { MemberJob } from './schedules/jobs.ts';
import { planRun, takeTurn, type PlanResult, type RunDeps, type TurnResult } from './schedules/run.ts';
import { ScheduleStore } from './schedules/store.ts';
import { WatchStore } from './watch/store.ts';
import { RulesFileApplier } from './rules-file.ts';

/** How to open a queue. Only `redisUrl` is required. */
export interface QueueOptions {
  redisUrl: string;
  /** Prefix of every Redis key (ours and BullMQ's); default `heapcap`, a hash tag `{heapcap}` on a cluster. Tests use a fresh one each. */
  prefix?: string | undefined;
  /** BullMQ attempts per capture (only retriable codes use them); default 3. */
  attempts?: number | undefined;
  /** First retry delay, doubled each retry; default 5000 ms. */
  backoffMs?: number | undefined;
  /** How long an Idempotency-Key maps to its capture; default 24 h. */
  idempotencyTtlMs?: number | undefined;
  /** Deadline of each Redis operation; default 3000 ms. */
  redisTimeoutMs?: number | undefined;
  /** Approximate cap of the audit stream; default 100 000 entries. */
  auditMaxLen?: number | undefined;
}

/** BullMQ job counts and record counts by status (for /metrics). */
export interface QueueDepth {
  jobs: Record<'waiting' | 'active' | 'delayed' | 'prioritized' | 'paused' | 'completed' | 'failed', number>;
  records: Record<CaptureStatus, number>;
}

/** Counters kept in Redis so every process reports the same totals. */
export type QueueCounter = 'lock_waits';

/** Schedules and retention, cluster-wide (for /metrics). */
export interface ScheduleMetrics {
  schedules: { active: number; paused: number };
  runs: { created: number; coalesced: number; skipped: number };
  retention: { deleted: number; failures: number; recordsDeleted: number };
}

/** Records, requests, locks, registry and audit log over one Redis. */
export class HeapcapQueue {
  readonly keys: Keys;
  readonly redisUrl: string;
  /** The command connection (not for blocking commands). */
  readonly redis: RedisClient;
  /** The BullMQ producer of `capture` jobs. */
  readonly bull: Queue<CaptureJob, void, string>;
  readonly targets: TargetRegistry;
  readonly locks: TargetLocks;
  readonly audit: AuditLog;
  /** Worker-side transitions of records. */
  readonly attempts: AttemptRecorder;
  /** The last measured snapshot cost per target, for the headroom gate. */
  readonly headroom: HeadroomHistory;
  /** Pub/sub: capture done, cancel requests. */
  readonly events: CaptureEvents;
  /** Schedule definitions, their last turns and BullMQ job schedulers. */
  readonly schedules: ScheduleStore;
  /** Growth and retained-size analyses of finished captures, and the `analysis` job producer. */
  readonly analyses: CaptureAnalyses;
  /** Leak hunts (three captures of one session, then the report) and the `leak-hunt` job producer. */
  readonly leakHunts: LeakHunts;
  /** Worker heartbeats and the placements that had jobs. */
  readonly workers: WorkerDirectory;
  /** Watch rules, their states, the samples of watched targets and the sampler leases. */
  readonly watch: WatchStore;
  /** The sentinel that tells when Redis lost its data. */
  readonly epoch: RedisEpoch;
  /** Applies HEAPCAP_RULES_FILE to the schedules and watch rules. */
  readonly rulesFile: RulesFileApplier;
  readonly #ctx: QueueContext;
  /** Producers of placement queues, opened on first use. */
  readonly #placed = new Map<string, Queue<CaptureJob, void, string>>();
  #closing: Promise<void> | undefined;

  constructor(options: QueueOptions) {
    const prefix = effectivePrefix(options.prefix ?? 'heapcap', isClusterRedisUrl(options.redisUrl));
    const settings: QueueSettings = {
      attempts: options.attempts ?? 3,
      backoffMs: options.backoffMs ?? 5_000,
      idempotencyTtlMs: options.idempotencyTtlMs ?? 24 * 3600 * 1000,
      redisTimeoutMs: options.redisTimeoutMs ?? 3_000,
      auditMaxLen: options.auditMaxLen ?? 100_000,
    };
    this.keys = new Keys(prefix);
    this.redisUrl = options.redisUrl;
    this.redis = createRedis(options.redisUrl, 'command', `${prefix}:cmd`);
    // BullMQ shares the command connection for a producer (it only duplicates for blocking workers).
    this.bull = new Queue<CaptureJob, void, string>(CAPTURE_QUEUE, { connection: this.redis, prefix });
    this.bull.on('error', () => {});
    this.events = new CaptureEvents(options.redisUrl, this.keys);
    this.#ctx = { redisUrl: options.redisUrl, redis: this.redis, keys: this.keys, bull: this.bull, queueFor: (p) => this.queueFor(p), events: this.events, settings };
    this.workers = new WorkerDirectory(this.#ctx);
    this.watch = new WatchStore(this.#ctx);
    this.targets = new TargetRegistry(this.#ctx);
    this.locks = new TargetLocks(this.#ctx);
    this.audit = new AuditLog(this.#ctx);
    this.attempts = new AttemptRecorder(this.#ctx);
    this.headroom = new HeadroomHistory(this.#ctx);
    this.schedules = new ScheduleStore(this.#ctx);
    this.analyses = new CaptureAnalyses(this.#ctx);
    this.epoch = new RedisEpoch(this.#ctx);
    this.rulesFile = new RulesFileApplier(this.#ctx, this.schedules, this.watch);
    this.leakHunts = new LeakHunts(this.#ctx, async (id) => (await this.targets.get(id))?.target ?? null);
  }

  #runDeps(): RunDeps {
    return { ctx: this.#ctx, schedules: this.schedules, targets: this.targets, request: (input, target) => this.#request(input, async (id) => (id === target.id ? target : null)) };
  }

  /** The producer of a placement's capture jobs (the shared one for none). */
  queueFor(placement: string | undefined | null): Queue<CaptureJob, void, string> {
    const name = captureQueueName(placement);
    if (name === CAPTURE_QUEUE) return this.bull;
    let q = this.#placed.get(name);
    if (q === undefined) {
      q = new Queue<CaptureJob, void, string>(name, { connection: this.redis, prefix: this.keys.prefix });
      q.on('error', () => {});
      this.#placed.set(name, q);
    }
    return q;
  }

  /**
   * Fail the queued (and orphaned running) captures and leak hunts of every
   * placement no live worker consumes, with no_worker_for_target: a worker that
   * died leaves its placement's jobs with nobody to run them or to recover them as stalled.
   * Run by every worker on its heartbeat and by the API. Returns the failed ids.
   */
  async failOrphanedPlacements(): Promise<string[]> {
    const [placements, live] = await Promise.all([this.workers.placements(), this.workers.list()]);
    const failed: string[] = [];
    for (const placement of placements) {
      if (live.some((w) => coversPlacement(w.placements, placement))) continue;
      const jobs = await withRedisDeadline(this.queueFor(placement).getJobs(['waiting', 'prioritized', 'delayed', 'active'], 0, 999), this.settings.redisTimeoutMs, 'orphaned jobs');
      for (const job of jobs) {
        if (job.id === undefined) continue;
        const record = await this.getCapture(job.id);
        if (record !== null && (record.status === 'queued' || record.status === 'running')) {
          const res = await this.attempts.abandon(record.id, record.targetId, noWorkerError(placement));
          if (res.ok) failed.push(record.id);
        }
        // An active job stays locked until its dead worker's lock expires; a later pass removes it.
        await job.remove().catch(() => undefined);
      }
      failed.push(...(await this.leakHunts.failOrphaned(placement)));
    }
    return failed;
  }

  /** The settings in force (defaults applied). */
  get settings(): Readonly<QueueSettings> {
    return this.#ctx.settings;
  }

  /** Create a capture, join a queued/running one of the same target, or replay an Idempotency-Key. */
  requestCapture(input: RequestCaptureInput): Promise<RequestCaptureResult> {
    return this.#request(input, async (id) => (await this.targets.get(id))?.target ?? null);
  }

  async #request(input: RequestCaptureInput, lookup: (id: string) => Promise<Target | null>): Promise<RequestCaptureResult> {
    let placement: string | undefined;
    const result = await requestCapture(
      this.#ctx,
      async (id) => {
        const target = await lookup(id);
        placement = target?.placement;
        return target;
      },
      input,
    );
    // Remembered until it finishes: if Redis loses its data meanwhile, this process queues it again.
    if (result.created && !isTerminal(result.record)) this.epoch.accepted.add(result.record, placement);
    return result;
  }

  /** One record, or null. */
  getCapture(id: string): Promise<CaptureRecord | null> {
    return getCapture(this.#ctx, id);
  }

  /**
   * For clients: the record, or, while Redis has lost it and this process has not queued it again yet, the
   * record of a capture this process accepted (so a capture answered 202 never answers 404); null if neither.
   */
  async readCapture(id: string): Promise<CaptureRecord | null> {
    return (await getCapture(this.#ctx, id)) ?? this.epoch.accepted.get(id) ?? null;
  }

  /** A page of records, newest first. Throws QueueError invalid_cursor / invalid_input. */
  listCaptures(filter?: ListCapturesFilter): Promise<CapturePage> {
    return listCaptures(this.#ctx, filter);
  }

  /** The newest earlier succeeded capture of a target with a summary, for growth (records.ts previousSummary). */
  previousSummary(targetId: string, beforeMs: number, excludeId: string, lookBack: number): Promise<{ id: string; summaryKey: string } | null> {
    return previousSummary(this.#ctx, targetId, beforeMs, excludeId, lookBack);
  }

  /** Cancel a queued or running capture. */
  cancelCapture(id: string): Promise<CancelResult> {
    return cancelCapture(this.#ctx, id);
  }

  /** The record once terminal, or as it is at the deadline / when `signal` aborts; null if unknown. */
  waitForCapture(id: string, timeoutMs: number, signal?: AbortSignal): Promise<CaptureRecord | null> {
    return waitForCapture(this.#ctx, id, timeoutMs, signal, (i) => this.readCapture(i));
  }

  /** Pin a capture (retention and the record TTL keep it) or unpin it; `by` is the token name. */
  setPin(id: string, pin: boolean, by: string, reason?: string): Promise<{ outcome: PinOutcome; record: CaptureRecord | null }> {
    return setPin(this.#ctx, id, pin, by, reason);
  }

  /** Plan the run of a schedule scheduled at `runAt` (ms): resolve its targets, add their member jobs. */
  planScheduleRun(scheduleId: string, runAt: number): Promise<PlanResult> {
    return planRun(this.#runDeps(), scheduleId, runAt);
  }

  /** Take one target's turn of a schedule run: join, wait for the group, or create its capture. */
  takeScheduleTurn(member: MemberJob): Promise<TurnResult> {
    return takeTurn(this.#runDeps(), member);
  }

  /** Schedules by state, turns by outcome, retention deletions and failures (cluster-wide). */
  async scheduleMetrics(): Promise<ScheduleMetrics> {
    const [schedules, runs, counters] = await Promise.all([
      this.schedules.list(),
      this.schedules.runCounts(),
      withRedisDeadline(this.redis.hmget(this.keys.counters(), 'retention_deleted', 'retention_failures', 'records_deleted'), this.settings.redisTimeoutMs, 'counters'),
    ]);
    const active = schedules.filter((s) => s.enabled).length;
    return {
      schedules: { active, paused: schedules.length - active },
      runs,
      retention: { deleted: Number(counters[0] ?? 0), failures: Number(counters[1] ?? 0), recordsDeleted: Number(counters[2] ?? 0) },
    };
  }

  /** Forget the artifact of a finished capture (after the API deleted the objects). */
  async clearArtifact(id: string): Promise<void> {
    await withRedisDeadline(this.redis.hset(this.keys.record(id), 'artifact', '', 'updatedAt', new Date().toISOString()), this.settings.redisTimeoutMs, 'clearArtifact');
  }

  /** Job counts by BullMQ state (the shared queue and every placement's, summed) and record counts by status. */
  async depth(): Promise<QueueDepth> {
    const placements = await this.workers.placements();
    const [jobs, cards] = await withRedisDeadline(
      Promise.all([
        Promise.all([this.bull, ...placements.map((p) => this.queueFor(p))].map((q) => q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed'))).then((all) => {
          const sum: Record<string, number> = {};
          for (const counts of all) for (const [k, v] of Object.entries(counts)) sum[k] = (sum[k] ?? 0) + v;
          return sum;
        }),
        Promise.all(CAPTURE_STATUSES.map((s) => this.redis.zcard(this.keys.indexStatus(s)))),
      ]),
      this.settings.redisTimeoutMs,
      'depth',
    );
    const records = Object.fromEntries(CAPTURE_STATUSES.map((s, i) => [s, cards[i] ?? 0])) as Record<CaptureStatus, number>;
    const j = (k: string): number => jobs[k] ?? 0;
    return {
      jobs: { waiting: j('waiting'), active: j('active'), delayed: j('delayed'), prioritized: j('prioritized'), paused: j('paused'), completed: j('completed'), failed: j('failed') },
      records,
    };
  }

  /** Add 1 to a shared counter. */
  async increment(counter: QueueCounter): Promise<void> {
    await withRedisDeadline(this.redis.hincrby(this.keys.counters(), counter, 1), this.settings.redisTimeoutMs, 'counter');
  }

  /** The shared counters. */
  async counters(): Promise<Record<QueueCounter, number>> {
    const all = await withRedisDeadline(this.redis.hgetall(this.keys.counters()), this.settings.redisTimeoutMs, 'counters');
    return { lock_waits: Number(all['lock_waits'] ?? 0) };
  }

  /** The finished-capture counters (outcomes, phase durations, bytes), as Redis holds them. */
  finishedMetrics(): Promise<FinishedMetrics> {
    return readFinishedMetrics(this.#ctx);
  }

  /** Resolves when Redis answers PING within `timeoutMs` (default 1000); throws QueueError redis_unavailable otherwise. */
  async ping(timeoutMs = 1_000): Promise<void> {
    await withRedisDeadline(this.redis.ping(), timeoutMs, 'PING');
  }

  /** Close the producer, the subscriber and the connection; idempotent, every step runs. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([this.bull.close(), ...[...this.#placed.values()].map((q) => q.close()), this.schedules.close(), this.events.close(), this.analyses.close(), this.leakHunts.close()]);
      await closeRedis(this.redis);
    })();
    return this.#closing;
  }
}

/** Open a queue (connects lazily; call `ping()` to check Redis). */
export function createQueue(options: QueueOptions): HeapcapQueue {
  return new HeapcapQueue(options);
}
