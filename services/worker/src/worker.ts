/**
 * CaptureWorker: a BullMQ Worker running the capture processor, plus the
 * cancel listener and the reconciler. `close()` is idempotent and ordered:
 * stop taking jobs, let running captures finish until the deadline, cancel the
 * rest (they go back to the queue), then close connections. Every step runs
 * even if an earlier one fails.
 */
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import { CAPTURE_QUEUE, reconcileCaptures, type HeapcapQueue } from '@heapcap/queue';
import type { ArtifactStore } from '@heapcap/storage';
import type { HeapcapConfig } from '@heapcap/config';
import { DEFAULT_TUNING, type WorkerTuning } from './options.ts';
import { createProcessor } from './processor.ts';
import { analysisConsumer } from './analysis.ts';
import { leakHuntConsumer } from './leak-hunt.ts';

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
  /** The N largest strings in each summary (HEAPCAP_SUMMARY_LARGEST_STRINGS). */
  summaryLargestStrings?: number | undefined;
  /** Retained-size analyses and leak hunts: the size limit (default 2e9 bytes) and jobs of each kind at a time in this process (default 1; 0: none). */
  analysis?: { maxBytes: number; concurrency: number } | undefined;
}

type State = 'created' | 'running' | 'closing' | 'closed';

/** The worker process's capture consumer. */
export class CaptureWorker {
  readonly tuning: WorkerTuning;
  readonly #deps: CaptureWorkerDeps;
  readonly #log: Logger;
  #state: State = 'created';
  #worker: Worker | undefined;
  #connection: HeapcapQueue['redis'] | undefined;
  #offCancel: (() => void) | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  /** Analyses and leak hunts: after-capture jobs, consumed beside the captures. */
  readonly #followUps: { start(): Promise<void>; close(): Promise<void> }[];
  readonly #stopHunts = new AbortController();

  constructor(deps: CaptureWorkerDeps) {
    this.#deps = deps;
    this.tuning = { ...DEFAULT_TUNING, ...deps.tuning };
    this.#log = deps.log;
    const analysis = deps.analysis ?? { maxBytes: 2_000_000_000, concurrency: 1 };
    const jobDeps = { queue: deps.queue, sink: deps.sink, log: deps.log, tempDir: deps.spillDir, ...analysis };
    this.#followUps = [analysisConsumer(jobDeps), leakHuntConsumer(jobDeps, this.#stopHunts.signal)];
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
      if (this.#worker?.cancelJob(captureId, 'cancel') === true) this.#log.info({ captureId }, 'cancel request received');
    });
    await this.#reconcile();
    this.#reconcileTimer = setInterval(() => void this.#reconcile(), this.tuning.reconcileIntervalMs);
    this.#reconcileTimer.unref();
    // BullMQ needs maxRetriesPerRequest: null on a worker's connection: its commands wait out an outage.
    this.#connection = queue.redis.duplicate({ maxRetriesPerRequest: null, connectionName: `${queue.keys.prefix}:worker` });
    this.#connection.on('error', () => {});
    const t = this.tuning;
    const worker = new Worker(CAPTURE_QUEUE, createProcessor({ ...this.#deps, tuning: t }), {
      connection: this.#connection,
      prefix: queue.keys.prefix,
      concurrency: t.concurrency,
      lockDuration: t.lockDurationMs,
      stalledInterval: t.stalledIntervalMs,
      maxStalledCount: t.maxStalledCount,
      autorun: false,
    });
    worker.on('error', (err) => this.#log.warn({ err }, 'worker connection error'));
    worker.on('stalled', (jobId) => this.#log.warn({ captureId: jobId }, 'capture job stalled (its worker died); it will run again'));
    worker.on('failed', (job, err) => {
      if (job !== undefined) this.#log.debug({ captureId: job.id, err: err.message }, 'job failed');
    });
    this.#worker = worker;
    void worker.run().catch((err: unknown) => this.#log.error({ err }, 'worker stopped unexpectedly'));
    await worker.waitUntilReady();
    for (const consumer of this.#followUps) await consumer.start();
    this.#log.info({ concurrency: t.concurrency, queue: CAPTURE_QUEUE, prefix: queue.keys.prefix }, 'worker started');
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
      ['stop cancel listener', async () => this.#offCancel?.()],
      ['drain captures', () => this.#drain(timeoutMs)],
      ['stop leak hunts', async () => this.#stopHunts.abort()],
      ['close analyses and leak hunts', () => Promise.all(this.#followUps.map((c) => c.close()))],
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

  /** Stop fetching; wait for running captures until the deadline; then cancel them (they re-queue) and force-close. */
  async #drain(timeoutMs: number): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    const closing = worker.close();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      closing.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (!timedOut) return;
    this.#log.warn({ timeoutMs }, 'captures still running at the shutdown deadline; cancelling them');
    worker.cancelAllJobs('shutdown');
    // The processors now hand their captures back; give them a moment, then stop regardless.
    const grace = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref());
    await Promise.race([closing, grace]);
    await worker.close(true);
  }
}

/** A worker wired from the parsed configuration (shared by the worker's and serve's entry points). */
export function workerFromConfig(config: HeapcapConfig, queue: HeapcapQueue, sink: ArtifactStore, log: Logger): CaptureWorker {
  return new CaptureWorker({
    queue,
    sink,
    log,
    tuning: { concurrency: config.workerConcurrency },
    memoryCeilingBytes: config.memoryCeilingBytes,
    spillDir: config.spillDir,
    snapshotTransport: config.snapshotTransport,
    pipeDir: config.pipeDir,
    summaryLargestStrings: config.summaryLargestStrings,
    analysis: { maxBytes: config.analysisMaxBytes, concurrency: config.analysisConcurrency },
  });
}
