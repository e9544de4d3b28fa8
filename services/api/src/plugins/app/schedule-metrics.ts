/**
 * Metrics of schedules and retention, read from Redis at scrape time (the
 * same on every replica): heapcap_schedules{state}, heapcap_schedule_runs_total{outcome}
 * (one per target turn: created, coalesced, skipped), heapcap_retention_deleted_total,
 * heapcap_retention_failures_total, heapcap_records_expired_total. Registered on
 * the app's metrics registry with collect callbacks, so /metrics serves them
 * with the rest. The counters live in Redis (workers increment them); they are
 * exposed as counters by resetting to the stored total at each scrape.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { HeapcapQueue, ScheduleMetrics } from '@heapcap/state';
import { readOncePerScrape } from './scrape-read.ts';

const scheduleMetricsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  const read = readOncePerScrape<ScheduleMetrics>(() => queue.scheduleMetrics());
  const registers = [app.metrics.registry];
  new Gauge({
    name: 'heapcap_schedules',
    help: 'Schedules by state (active: its job scheduler runs it; paused)',
    labelNames: ['state'],
    registers,
    async collect() {
      const m = await read();
      if (m === null) return;
      this.set({ state: 'active' }, m.schedules.active);
      this.set({ state: 'paused' }, m.schedules.paused);
    },
  });
  new Counter({
    name: 'heapcap_schedule_runs_total',
    help: 'Schedule turns (one per target per run) by outcome: created a capture, coalesced into one queued/running, skipped (cluster-wide)',
    labelNames: ['outcome'],
    registers,
    async collect() {
      const m = await read();
      if (m === null) return;
      this.reset();
      for (const [outcome, n] of Object.entries(m.runs)) this.inc({ outcome }, n);
    },
  });
  const totals: [name: string, help: string, pick: (m: ScheduleMetrics) => number][] = [
    ['heapcap_retention_deleted_total', 'Artifacts deleted by retention (cluster-wide)', (m) => m.retention.deleted],
    ['heapcap_retention_failures_total', 'Retention deletions that failed (retried on the next run; cluster-wide)', (m) => m.retention.failures],
    ['heapcap_records_expired_total', 'Capture records deleted after the record TTL (cluster-wide)', (m) => m.retention.recordsDeleted],
  ];
  for (const [name, help, pick] of totals) {
    new Counter({
      name,
      help,
      registers,
      async collect() {
        const m = await read();
        if (m === null) return;
        this.reset();
        this.inc(pick(m));
      },
    });
  }
};

export default fp(scheduleMetricsPlugin, { name: 'heapcap-schedule-metrics', dependencies: ['heapcap-metrics'] });
