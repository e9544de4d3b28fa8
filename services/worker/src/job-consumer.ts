/**
 * A BullMQ consumer for the jobs that follow captures (analyses, leak
 * hunts): its own connection, a payload schema, a runner that records its
 * own outcome. A failure that reaches here (Redis) fails the job without
 * retries; BullMQ keeps it for inspection. `close()` is idempotent.
 */
import { Worker, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { toCaptureError } from '@heapcap/errors';
import { closeWorker, duplicateRedis, type HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';

/** What the after-capture jobs (analysis, leak hunt) run with. */
export interface FollowUpDeps {
  queue: HeapcapQueue;
  sink: ArtifactStore;
  log: Logger;
  /** Refuse snapshots with more JSON bytes (HEAPCAP_ANALYSIS_MAX_BYTES; for a hunt, per snapshot). */
  maxBytes: number;
  /** Where snapshots are copied while they are read (default: the OS temp dir). */
  tempDir?: string | undefined;
  /** Jobs of each kind at a time in this process; 0: this process takes none. */
  concurrency: number;
}

/** What the consumer needs of a payload schema (a zod schema from @heapcap/state). */
export interface PayloadSchema<T> {
  safeParse(data: unknown): { success: true; data: T } | { success: false };
}

export interface JobConsumerOptions<T> {
  queue: HeapcapQueue;
  log: Logger;
  /** BullMQ queue name. */
  name: string;
  schema: PayloadSchema<T>;
  /** Jobs at a time; 0: the consumer takes none. */
  concurrency: number;
  run: (payload: T) => Promise<unknown>;
}

/** Consumes one queue of after-capture jobs. */
export class JobConsumer<T> {
  readonly #o: JobConsumerOptions<T>;
  #worker: Worker | undefined;
  #connection: HeapcapQueue['redis'] | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: JobConsumerOptions<T>) {
    this.#o = options;
  }

  /** Start taking jobs (nothing when concurrency is 0). */
  async start(): Promise<void> {
    const { queue, log, name, concurrency } = this.#o;
    if (concurrency === 0 || this.#worker !== undefined) return;
    this.#connection = duplicateRedis(queue.redis, { maxRetriesPerRequest: null, connectionName: `${queue.keys.prefix}:${name}` });
    this.#connection.on('error', () => {});
    const worker = new Worker(name, (job: Job<unknown>) => this.#process(job), {
      connection: this.#connection,
      prefix: queue.keys.prefix,
      concurrency,
      // The analysis holds the event loop while it computes dominators: a lock renewal may come late.
      lockDuration: 120_000,
      autorun: false,
    });
    worker.on('error', (err) => log.warn({ err, queue: name }, 'job consumer connection error'));
    this.#worker = worker;
    void worker.run().catch((err: unknown) => log.error({ err, queue: name }, 'job consumer stopped unexpectedly'));
    await worker.waitUntilReady();
  }

  async #process(job: Job<unknown>): Promise<void> {
    const parsed = this.#o.schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid_input: bad ${this.#o.name} job payload`);
    try {
      await this.#o.run(parsed.data);
    } catch (err) {
      throw new UnrecoverableError(toCaptureError(err).message);
    }
  }

  /**
   * Stop taking jobs, give the running ones `graceMs`, then stop regardless
   * (an analysis of a large snapshot must not hold a shutdown: its job lock
   * expires and another worker runs it again), close the connection. Idempotent.
   */
  close(graceMs = 5_000): Promise<void> {
    this.#closing ??= (async () => {
      const worker = this.#worker;
      if (worker !== undefined) await closeWorker(worker, { graceMs });
      this.#connection?.disconnect();
    })();
    return this.#closing;
  }
}
