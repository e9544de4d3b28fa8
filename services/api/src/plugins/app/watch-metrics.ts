/**
 * Metrics of watch rules, read from Redis at scrape time (the same on every
 * replica): heapcap_watch_rules{state}, heapcap_watch_firings_total{outcome}.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import { type HeapcapQueue } from '@heapcap/state';
import { FIRING_OUTCOMES, type FiringOutcome } from '@heapcap/state/watch';
import { readOncePerScrape } from './scrape-read.ts';

interface WatchMetrics {
  rules: { active: number; paused: number };
  firings: Record<FiringOutcome, number>;
}

const watchMetricsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue }> = async (app, { queue }) => {
  const read = readOncePerScrape<WatchMetrics>(async () => {
    const [rules, firings] = await Promise.all([queue.watch.list(), queue.watch.firingCounts()]);
    return { rules: { active: rules.filter((r) => r.enabled).length, paused: rules.filter((r) => !r.enabled).length }, firings };
  });
  const registers = [app.metrics.registry];
  new Gauge({
    name: 'heapcap_watch_rules',
    help: 'Watch rules by state (active: its targets are sampled; paused)',
    labelNames: ['state'],
    registers,
    async collect() {
      const m = await read();
      if (m === null) return;
      this.set({ state: 'active' }, m.rules.active);
      this.set({ state: 'paused' }, m.rules.paused);
    },
  });
  new Counter({
    name: 'heapcap_watch_firings_total',
    help: 'Watch rule firings by outcome: captured, refused_headroom, sampled (the profile taken instead), suppressed_cooldown, suppressed_cap, failed (cluster-wide)',
    labelNames: ['outcome'],
    registers,
    async collect() {
      const m = await read();
      if (m === null) return;
      this.reset();
      for (const outcome of FIRING_OUTCOMES) this.inc({ outcome }, m.firings[outcome]);
    },
  });
};

export default fp(watchMetricsPlugin, { name: 'heapcap-watch-metrics', dependencies: ['heapcap-metrics'] });
