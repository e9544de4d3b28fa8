/**
 * Prometheus metrics (prom-client, one registry per app so tests and
 * `heapcap serve` never share global state).
 *
 * Two sources:
 * - Redis, read at scrape time, so every api replica reports the same
 *   cluster-wide numbers: records by status, BullMQ jobs by state, lock waits,
 *   and the finished-capture counters (outcomes by error code, phase
 *   durations, bytes), which the queue updates in the same Lua script that
 *   finishes a record: no finish is missed, none counted twice.
 * - This process: requests it accepted, downloads it served, and prom-client's
 *   process metrics (`process_resident_memory_bytes`, `process_open_fds`,
 *   `nodejs_eventloop_lag_p99_seconds`, heap sizes, GC): in `heapcap serve`
 *   the worker runs in the same process, so a leak or a blocked loop in either
 *   shows here (the soak reads them).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { DataLossCounts, FinishedMetrics, HeapcapQueue } from '@heapcap/state';
import type { RulesFileHealth } from '../../deps.ts';

/** Label values in the exposition format: backslash, quote and newline escaped. */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The exposition text of the Redis-held finished-capture counters. */
export function renderFinished(m: FinishedMetrics): string {
  const lines: string[] = [
    '# HELP heapcap_captures_finished_total Captures that reached a terminal status, by status and error code (cluster-wide, from Redis)',
    '# TYPE heapcap_captures_finished_total counter',
    ...m.finished.map((f) => `heapcap_captures_finished_total{status="${label(f.status)}",error_code="${label(f.errorCode)}"} ${f.count}`),
    "# HELP heapcap_capture_phase_duration_seconds Duration of each capture phase (from the worker's phase clock; cluster-wide, from Redis)",
    '# TYPE heapcap_capture_phase_duration_seconds histogram',
  ];
  for (const [phase, h] of Object.entries(m.phases).sort(([a], [b]) => a.localeCompare(b))) {
    for (const b of h.buckets) lines.push(`heapcap_capture_phase_duration_seconds_bucket{phase="${label(phase)}",le="${b.le}"} ${b.count}`);
    lines.push(`heapcap_capture_phase_duration_seconds_sum{phase="${label(phase)}"} ${h.sum}`, `heapcap_capture_phase_duration_seconds_count{phase="${label(phase)}"} ${h.count}`);
  }
  lines.push(
    '# HELP heapcap_capture_bytes_total Snapshot bytes of succeeded captures: uncompressed (from the target) and stored (after gzip); cluster-wide, from Redis',
    '# TYPE heapcap_capture_bytes_total counter',
    ...Object.entries(m.bytes).map(([kind, n]) => `heapcap_capture_bytes_total{kind="${label(kind)}"} ${n}`),
  );
  return `${lines.join('\n')}\n`;
}

/**
 * The Redis data-loss counters: this process's own (counters kept in Redis go
 * with the data they count). `accepted`: records this process wrote again for
 * captures it had accepted; `running`: records a worker in this process wrote
 * again for the capture it ran (in `heapcap serve` both are this process).
 */
export function renderDataLoss(c: DataLossCounts): string {
  return [
    '# HELP heapcap_redis_data_loss_total Times this process found that Redis had lost its data (restart without persistence, failover, FLUSHALL)',
    '# TYPE heapcap_redis_data_loss_total counter',
    `heapcap_redis_data_loss_total ${c.losses}`,
    '# HELP heapcap_captures_lost_with_redis_total Captures whose record went with Redis\'s data and was written again by this process: accepted (not started: queued again) or running (as it ended)',
    '# TYPE heapcap_captures_lost_with_redis_total counter',
    `heapcap_captures_lost_with_redis_total{state="accepted"} ${c.captures.accepted}`,
    `heapcap_captures_lost_with_redis_total{state="running"} ${c.captures.running}`,
    '',
  ].join('\n');
}

/**
 * HEAPCAP_RULES_FILE in this process: 1 while the last text read was applied,
 * 0 while it is refused (the rules applied before it keep running, so nothing
 * else shows it); and how many texts were refused. No samples without the setting.
 */
export function renderRulesFile(rules: RulesFileHealth | undefined): string {
  // The families are always declared (alert rules and dashboards name them); samples only with a rules file.
  const s = rules?.status();
  return [
    '# HELP heapcap_rules_file_valid 1 when the last read of HEAPCAP_RULES_FILE was applied, 0 while it is refused (the rules applied before keep running)',
    '# TYPE heapcap_rules_file_valid gauge',
    ...(s === undefined ? [] : [`heapcap_rules_file_valid ${s.refused === undefined ? 1 : 0}`]),
    '# HELP heapcap_rules_file_refused_total Texts of HEAPCAP_RULES_FILE this process refused (syntax, schema, checks, conflicts; a missing file once)',
    '# TYPE heapcap_rules_file_refused_total counter',
    ...(s === undefined ? [] : [`heapcap_rules_file_refused_total ${s.refusals}`]),
    '',
  ].join('\n');
}

/** The API's metrics; handlers record into these. */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'outcome'>;
  readonly downloads: Counter<'encoding'>;
  readonly #records: Gauge<'status'>;
  readonly #jobs: Gauge<'state'>;
  readonly #lockWaits: Gauge;
  readonly #redisUp: Gauge;
  readonly #queue: HeapcapQueue;
  readonly #rulesFile: RulesFileHealth | undefined;
  /** The last finished counters read; kept (stale) while Redis is down, so counters never go backwards. */
  #finished: FinishedMetrics = { finished: [], phases: {}, bytes: {} };

  constructor(queue: HeapcapQueue, rulesFile?: RulesFileHealth) {
    this.#queue = queue;
    this.#rulesFile = rulesFile;
    const registers = [this.registry];
    this.requests = new Counter({ name: 'heapcap_capture_requests_total', help: 'Capture requests accepted by this api process, by outcome (created, coalesced, replayed)', labelNames: ['outcome'], registers });
    this.downloads = new Counter({ name: 'heapcap_artifact_downloads_total', help: 'Artifact downloads started, by encoding (identity, gzip, redirect)', labelNames: ['encoding'], registers });
    this.#records = new Gauge({ name: 'heapcap_captures', help: 'Capture records in Redis by status', labelNames: ['status'], registers });
    this.#jobs = new Gauge({ name: 'heapcap_queue_jobs', help: 'BullMQ capture jobs by state', labelNames: ['state'], registers });
    // A cluster-wide counter kept in Redis; exposed as a gauge because this process only reads it.
    this.#lockWaits = new Gauge({ name: 'heapcap_lock_waits', help: 'Times a worker found a target lock held and waited (cluster-wide, monotonic)', registers });
    this.#redisUp = new Gauge({ name: 'heapcap_redis_up', help: '1 when Redis answered the last scrape, else 0', registers });
    // Event-loop delay at 20 ms resolution: enough to see a blocked loop, negligible cost.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });
  }

  /** Reads the Redis-backed numbers; on failure reports Redis down and keeps the last values. */
  async refresh(): Promise<void> {
    try {
      const [depth, counters, finished] = await Promise.all([this.#queue.depth(), this.#queue.counters(), this.#queue.finishedMetrics()]);
      for (const [status, n] of Object.entries(depth.records)) this.#records.set({ status }, n);
      for (const [state, n] of Object.entries(depth.jobs)) this.#jobs.set({ state }, n);
      this.#lockWaits.set(counters.lock_waits);
      this.#finished = finished;
      this.#redisUp.set(1);
    } catch {
      this.#redisUp.set(0);
    }
  }

  /** The exposition text. */
  async render(): Promise<{ contentType: string; body: string }> {
    await this.refresh();
    return { contentType: this.registry.contentType, body: `${await this.registry.metrics()}${renderFinished(this.#finished)}${renderDataLoss(this.#queue.epoch.counts())}${renderRulesFile(this.#rulesFile)}` };
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ApiMetrics;
  }
}

const metricsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; rulesFile?: RulesFileHealth | undefined }> = async (app, opts) => {
  app.decorate('metrics', new ApiMetrics(opts.queue, opts.rulesFile));
};

export default fp(metricsPlugin, { name: 'heapcap-metrics' });
