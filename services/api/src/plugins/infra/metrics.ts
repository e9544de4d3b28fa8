/**
 * Prometheus metrics (prom-client, one registry per app so tests and
 * `heapcap serve` never share global state).
 *
 * Two sources:
 * - Redis, read at scrape time, so every api replica reports the same
 *   cluster-wide numbers: records by status, BullMQ jobs by state, lock waits.
 * - Finished captures, observed by this process from the queue's "done"
 *   pub/sub channel: outcomes by error code, phase durations, bytes. Pub/sub
 *   drops messages while Redis is unreachable, so these can undercount
 *   across an outage; they are per process (sum over replicas = N × truth).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { Redis } from 'ioredis';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CaptureRecord, HeapcapQueue } from '@heapcap/queue';

/** Phases whose durations are observed (the record's timings, in ms). */
const PHASES = ['queued', 'connect', 'preflight', 'warm', 'enable', 'gc', 'generate', 'serialize', 'sink', 'upload', 'total'] as const;

/** The API's metrics; handlers record into these. */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'outcome'>;
  readonly downloads: Counter<'encoding'>;
  readonly #records: Gauge<'status'>;
  readonly #jobs: Gauge<'state'>;
  readonly #lockWaits: Gauge;
  readonly #redisUp: Gauge;
  readonly #finished: Counter<'status' | 'error_code'>;
  readonly #phase: Histogram<'phase'>;
  readonly #bytes: Counter<'kind'>;
  readonly #queue: HeapcapQueue;

  constructor(queue: HeapcapQueue) {
    this.#queue = queue;
    const registers = [this.registry];
    this.requests = new Counter({ name: 'heapcap_capture_requests_total', help: 'Capture requests accepted by this api process, by outcome (created, coalesced, replayed)', labelNames: ['outcome'], registers });
    this.downloads = new Counter({ name: 'heapcap_artifact_downloads_total', help: 'Artifact downloads started, by encoding (identity, gzip, redirect)', labelNames: ['encoding'], registers });
    this.#records = new Gauge({ name: 'heapcap_captures', help: 'Capture records in Redis by status', labelNames: ['status'], registers });
    this.#jobs = new Gauge({ name: 'heapcap_queue_jobs', help: 'BullMQ capture jobs by state', labelNames: ['state'], registers });
    // A cluster-wide counter kept in Redis; exposed as a gauge because this process only reads it.
    this.#lockWaits = new Gauge({ name: 'heapcap_lock_waits', help: 'Times a worker found a target lock held and waited (cluster-wide, monotonic)', registers });
    this.#redisUp = new Gauge({ name: 'heapcap_redis_up', help: '1 when Redis answered the last scrape, else 0', registers });
    this.#finished = new Counter({ name: 'heapcap_captures_finished_total', help: 'Captures that reached a terminal status, seen by this process, by status and error code', labelNames: ['status', 'error_code'], registers });
    this.#phase = new Histogram({
      name: 'heapcap_capture_phase_duration_seconds',
      help: 'Duration of each capture phase (from the worker\'s phase clock)',
      labelNames: ['phase'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.#bytes = new Counter({ name: 'heapcap_capture_bytes_total', help: 'Snapshot bytes of succeeded captures: uncompressed (from the target) and stored (after gzip)', labelNames: ['kind'], registers });
  }

  /** Records the outcome, phase durations and sizes of a finished capture. */
  observeFinished(record: CaptureRecord): void {
    this.#finished.inc({ status: record.status, error_code: record.error?.code ?? '' });
    for (const phase of PHASES) {
      const ms = record.timings?.[phase];
      if (ms !== undefined && Number.isFinite(ms) && ms >= 0) this.#phase.observe({ phase }, ms / 1000);
    }
    if (record.status === 'succeeded' && record.artifact !== null) {
      this.#bytes.inc({ kind: 'uncompressed' }, record.artifact.bytesUncompressed);
      this.#bytes.inc({ kind: 'stored' }, record.artifact.bytesStored);
    }
  }

  /** Reads the Redis-backed numbers; on failure reports Redis down and keeps the last values. */
  async refresh(): Promise<void> {
    try {
      const [depth, counters] = await Promise.all([this.#queue.depth(), this.#queue.counters()]);
      for (const [status, n] of Object.entries(depth.records)) this.#records.set({ status }, n);
      for (const [state, n] of Object.entries(depth.jobs)) this.#jobs.set({ state }, n);
      this.#lockWaits.set(counters.lock_waits);
      this.#redisUp.set(1);
    } catch {
      this.#redisUp.set(0);
    }
  }

  /** The exposition text. */
  async render(): Promise<{ contentType: string; body: string }> {
    await this.refresh();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/**
 * Subscribes to the queue's done channel and feeds finished records to `metrics`.
 * Returns the function that unsubscribes and closes the connection.
 */
async function observeDoneEvents(queue: HeapcapQueue, metrics: ApiMetrics, onError: (err: unknown) => void): Promise<() => Promise<void>> {
  // A subscriber connection cannot send other commands: its own connection.
  // maxRetriesPerRequest null: SUBSCRIBE waits for Redis instead of failing when
  // the API starts during an outage; ioredis re-subscribes after reconnects.
  const sub: Redis = queue.redis.duplicate({ connectionName: `${queue.keys.prefix}:api-metrics`, maxRetriesPerRequest: null });
  sub.on('error', () => {});
  const channel = queue.keys.doneChannel();
  sub.on('message', (ch: string, message: string) => {
    if (ch !== channel) return;
    const id = message.split(' ')[0];
    if (id === undefined || id === '') return;
    queue.getCapture(id).then(
      (record) => {
        if (record !== null) metrics.observeFinished(record);
      },
      onError,
    );
  });
  // Not awaited: the API must start even while Redis is down.
  sub.subscribe(channel).catch(onError);
  return async () => {
    sub.disconnect();
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ApiMetrics;
  }
}

const metricsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; observeDone?: boolean }> = async (app, opts) => {
  const metrics = new ApiMetrics(opts.queue);
  app.decorate('metrics', metrics);
  if (opts.observeDone !== false) {
    const stop = await observeDoneEvents(opts.queue, metrics, (err) => app.log.warn({ err }, 'metrics: reading a finished capture failed'));
    app.addHook('onClose', stop);
  }
};

export default fp(metricsPlugin, { name: 'heapcap-metrics' });
