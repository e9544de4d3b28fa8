/**
 * CaptureWorker: a BullMQ Worker running the capture processor, plus the
 * cancel listener and the reconciler. `close()` is idempotent and ordered:
 * stop taking jobs, let running captures finish until the deadline, cancel the
 * rest (they go back to the queue), then close connections. Every step runs
 * even if an earlier one fails.
 *
 * Affinity: one BullMQ Worker per consumed queue: the shared one (targets
 * without a placement) plus one per placement it was started with (`*`: every
 * placement that has had jobs, looked up again at each heartbeat), and
 * likewise one leak-hunt consumer per placement (a hunt connects to its
 * target like a capture). The heartbeat announces the worker in Redis and
 * fails the captures and hunts of placements nobody consumes any more.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { CAPTURE_QUEUE, captureQueueName, closeWorker, duplicateRedis, leakHuntQueueName, reconcileCaptures, type HeapcapQueue, type WorkerInfo } from '@heapcap/state';
import { HEAPCAP_VERSION, type HeapcapConfig, type RedactMode } from '@heapcap/config';
import { rememberCheck, type ArtifactStore } from '@heapcap/storage';
import { DEFAULT_TUNING, type WorkerTuning } from './options.ts';
import { createProcessor } from './processor.ts';
import { analysisConsumer } from './analysis.ts';
import { HuntSlots, leakHuntConsumer } from './leak-hunt.ts';

export interface CaptureWorkerDeps {
  queue: HeapcapQueue;
  sink: ArtifactStore;
  log: Logger;
  /** At least `concurrency`; the rest default to DEFAULT_TUNING. */
  tuning: Partial<WorkerTuning> & { concurrency: number };
  memoryCeilingBytes?: number | undefined;
  spillDir?: string | undefined;
  snapshotTransport?: 'auto' | 'cdp' | 'pipe' | undefined;
  pipeDir?: string | undefined;
  /** HEAPCAP_REDACT: redaction of captures and hunts whose target (and request) say nothing (default none). */
  redact?: RedactMode | undefined;
  /** The N largest strings in each summary (HEAPCAP_SUMMARY_LARGEST_STRINGS). */
  summaryLargestStrings?: number | undefined;
  /** Retained-size analyses and leak hunts: the size limit (default 2e9 bytes) and jobs of each kind at a time in this process (default 1; 0: none). */
  analysis?: { maxBytes: number; concurrency: number } | undefined;
  /** HEAPCAP_WORKER_PLACEMENTS: `['*']` (the default) or the placements to capture. */
  placements?: string[] | undefined;
  /** The id announced in the heartbeat and written into records; default `<host>-<pid>-<random>`. */
  id?: string | undefined;
}

type State = 'created' | 'running' | 'closing' | 'closed';

/** The worker process's capture consumer. */
export class CaptureWorker {
  readonly tuning: WorkerTuning;
  readonly #deps: CaptureWorkerDeps;
  readonly #log: Logger;
  #state: State = 'created';
  /** BullMQ workers by queue name. */
  readonly #workers = new Map<string, Worker>();
  #processor: ((job: Job<unknown>, token: string | undefined, signal: AbortSignal | undefined) => Promise<void>) | undefined;
  #inFlight = 0;
  #startedAt = new Date().toISOString();
  #beatTimer: NodeJS.Timeout | undefined;
  readonly id: string;
  readonly placements: string[];
  #connection: HeapcapQueue['redis'] | undefined;
  #offCancel: (() => void) | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  /** Analyses: after-capture jobs, consumed beside the captures (one shared queue: they read storage, not targets). */
  readonly #followUps: { start(): Promise<void>; close(): Promise<void> }[];
  /** Leak hunts connect to targets: one consumer per consumed placement, like the captures; by queue name. */
  readonly #hunts = new Map<string, { start(): Promise<void>; close(): Promise<void> }>();
  readonly #huntDeps: Parameters<typeof leakHuntConsumer>[0];
  readonly #huntSlots: HuntSlots;
  readonly #stopHunts = new AbortController();

  constructor(deps: CaptureWorkerDeps) {
    this.#deps = deps;
    this.tuning = { ...DEFAULT_TUNING, ...deps.tuning };
    this.#log = deps.log;
    this.placements = deps.placements ?? ['*'];
    this.id = deps.id ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const analysis = deps.analysis ?? { maxBytes: 2_000_000_000, concurrency: 1 };
    const jobDeps = { queue: deps.queue, sink: deps.sink, log: deps.log, tempDir: deps.spillDir, ...analysis };
    this.#followUps = [analysisConsumer(jobDeps)];
    this.#huntDeps = { ...jobDeps, workerId: this.id, redact: deps.redact };
    this.#huntSlots = new HuntSlots(Math.max(1, analysis.concurrency));
  }

  /** Captures running in this process now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Where the worker is in its life. */
  get state(): State {
    return this.#state;
  }

  /** Connect, subscribe to cancel requests, reconcile once and start taking jobs. */
  async start(): Promise<void> {
    if (this.#state !== 'created') throw new Error(`cannot start a worker that is ${this.#state}`);
    this.#state = 'running';
    const { queue } = this.#deps;
    await queue.events.ready();
    // Cancel requests reach every worker; only the one holding the job has it tracked.
    this.#offCancel = queue.events.onCancel((captureId) => {
      if ([...this.#workers.values()].some((w) => w.cancelJob(captureId, 'cancel'))) this.#log.info({ captureId }, 'cancel request received');
    });
    await this.#reconcile();
    this.#reconcileTimer = setInterval(() => void this.#reconcile(), this.tuning.reconcileIntervalMs);
    this.#reconcileTimer.unref();
    // BullMQ needs maxRetriesPerRequest: null on a worker's connection: its commands wait out an outage.
    this.#connection = duplicateRedis(queue.redis, { maxRetriesPerRequest: null, connectionName: `${queue.keys.prefix}:worker` });
    this.#connection.on('error', () => {});
    const t = this.tuning;
    // The storage check before each capture stands for a while (a failed write forgets it): remember-check.ts.
    const run = createProcessor({ ...this.#deps, sink: rememberCheck(this.#deps.sink), tuning: t, workerId: this.id });
    this.#processor = async (job, token, signal) => {
      this.#inFlight += 1;
      try {
        await run(job, token, signal);
      } finally {
        this.#inFlight -= 1;
      }
    };
    // Not fatal when Redis is slow at start: the heartbeat timer tries again.
    await this.#beat().catch((err: unknown) => this.#log.warn({ err }, 'first heartbeat failed; will try again'));
    // Beating from now on: starting the consumers below (a Redis connection each) can outlast the heartbeat's TTL.
    this.#beatTimer = setInterval(() => void this.#tick(), t.heartbeatIntervalMs);
    this.#beatTimer.unref();
    await this.#consumePlacement(undefined);
    for (const p of this.placements) if (p !== '*') await this.#consumePlacement(p);
    await this.#followPlacements();
    for (const consumer of this.#followUps) await consumer.start();
    this.#log.info({ concurrency: t.concurrency, workerId: this.id, placements: this.placements, queues: [...this.#workers.keys(), ...this.#hunts.keys()], prefix: queue.keys.prefix }, 'worker started');
  }

  /** Consume `placement`'s captures and leak hunts (the shared queues for none): everything that connects to its targets. */
  async #consumePlacement(placement: string | undefined): Promise<void> {
    await this.#consume(placement === undefined ? CAPTURE_QUEUE : captureQueueName(placement));
    const name = leakHuntQueueName(placement);
    if (this.#hunts.has(name) || this.#state !== 'running') return;
    const consumer = leakHuntConsumer(this.#huntDeps, this.#stopHunts.signal, this.#huntSlots, placement);
    this.#hunts.set(name, consumer);
    await consumer.start();
  }

  /** Start a BullMQ worker on `name` unless one runs. */
  async #consume(name: string): Promise<void> {
    if (this.#workers.has(name) || this.#state !== 'running' || this.#connection === undefined || this.#processor === undefined) return;
    const t = this.tuning;
    const worker = new Worker(name, this.#processor, {
      connection: this.#connection,
      prefix: this.#deps.queue.keys.prefix,
      concurrency: t.concurrency,
      lockDuration: t.lockDurationMs,
      stalledInterval: t.stalledIntervalMs,
      maxStalledCount: t.maxStalledCount,
      autorun: false,
    });
    worker.on('error', (err) => this.#log.warn({ err, queue: name }, 'worker connection error'));
    worker.on('stalled', (jobId) => this.#log.warn({ captureId: jobId }, 'capture job stalled (its worker died); it will run again'));
    worker.on('failed', (job, err) => {
      if (job !== undefined) this.#log.debug({ captureId: job.id, err: err.message }, 'job failed');
    });
    this.#workers.set(name, worker);
    void worker.run().catch((err: unknown) => this.#log.error({ err, queue: name }, 'worker stopped unexpectedly'));
    await worker.waitUntilReady();
  }

  /** A `*` worker also consumes every placement queue that exists. */
  async #followPlacements(): Promise<void> {
    if (!this.placements.includes('*')) return;
    for (const p of await this.#deps.queue.workers.placements()) await this.#consumePlacement(p);
  }

  #info(): WorkerInfo {
    return {
      id: this.id,
      placements: this.placements,
      version: HEAPCAP_VERSION,
      host: hostname(),
      pid: process.pid,
      inFlight: this.#inFlight,
      startedAt: this.#startedAt,
      lastSeenAt: new Date().toISOString(),
    };
  }

  async #beat(): Promise<void> {
    await this.#deps.queue.workers.beat(this.#info(), this.tuning.heartbeatIntervalMs * 3);
  }

  /**
   * Heartbeat, new placement queues, and the orphaned placements' captures.
   * A closing worker stops beating but leaves its key to expire (3 beats): a
   * rolling restart's replacement has that long to arrive before the
   * placement's queued captures fail with no_worker_for_target.
   */
  async #tick(): Promise<void> {
    if (this.#state !== 'running') return;
    try {
      await this.#beat();
      await this.#followPlacements();
      const failed = await this.#deps.queue.failOrphanedPlacements();
      if (failed.length > 0) this.#log.warn({ failed }, 'failed captures and leak hunts of placements without a live worker');
    } catch (err) {
      this.#log.warn({ err }, 'heartbeat failed; will try again');
    }
  }

  async #reconcile(): Promise<void> {
    try {
      const report = await reconcileCaptures(this.#deps.queue);
      if (report.enqueued.length + report.abandoned.length > 0) this.#log.warn(report, 'reconciled records and jobs');
    } catch (err) {
      this.#log.warn({ err }, 'reconcile failed; will try again');
    }
  }

  /**
   * Graceful stop within `timeoutMs` (default tuning.shutdownTimeoutMs): running
   * captures get until the deadline, then are cancelled and handed back to the
   * queue. Idempotent; resolves when everything is closed.
   */
  close(timeoutMs: number = this.tuning.shutdownTimeoutMs): Promise<void> {
    this.#closing ??= this.#close(timeoutMs);
    return this.#closing;
  }

  async #close(timeoutMs: number): Promise<void> {
    this.#state = 'closing';
    const steps: [string, () => Promise<unknown>][] = [
      ['stop reconciler', async () => clearInterval(this.#reconcileTimer)],
      ['stop heartbeat', async () => clearInterval(this.#beatTimer)],
      ['stop cancel listener', async () => this.#offCancel?.()],
      ['drain captures', () => Promise.all([...this.#workers.values()].map((w) => this.#drain(w, timeoutMs)))],
      ['stop leak hunts', async () => this.#stopHunts.abort()],
      ['close analyses and leak hunts', () => Promise.all([...this.#followUps, ...this.#hunts.values()].map((c) => c.close()))],
      ['close connection', async () => this.#connection?.disconnect()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        this.#log.warn({ err, step: name }, 'shutdown step failed; continuing');
      }
    }
    this.#state = 'closed';
    this.#log.info('worker closed');
  }

  /** Stop fetching; wait for running captures until the deadline; then cancel them (they re-queue) and cut the connections. */
  async #drain(worker: Worker, timeoutMs: number): Promise<void> {
    await closeWorker(worker, {
      graceMs: timeoutMs,
      onLate: async (closing, why) => {
        if (why === 'deadline') this.#log.warn({ timeoutMs }, 'captures still running at the shutdown deadline; cancelling them');
        else this.#log.warn('Redis does not answer: cancelling running captures without waiting (nothing they do can be recorded)');
        worker.cancelAllJobs('shutdown');
        // The processors now hand their captures back; closeWorker gives them 5 s, then stops regardless.
        await closing;
      },
    });
  }
}

/** A worker wired from the parsed configuration (shared by the worker's and serve's entry points). */
export function workerFromConfig(config: HeapcapConfig, queue: HeapcapQueue, sink: ArtifactStore, log: Logger): CaptureWorker {
  return new CaptureWorker({
    queue,
    sink,
    log,
    tuning: { concurrency: config.workerConcurrency },
    placements: config.workerPlacements,
    memoryCeilingBytes: config.memoryCeilingBytes,
    spillDir: config.spillDir,
    snapshotTransport: config.snapshotTransport,
    pipeDir: config.pipeDir,
    redact: config.redact,
    summaryLargestStrings: config.summaryLargestStrings,
    analysis: { maxBytes: config.analysisMaxBytes, concurrency: config.analysisConcurrency },
  });
}
