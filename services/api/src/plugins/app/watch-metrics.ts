/**
 * Metrics of watch rules, read from Redis at scrape time (the same on every
 * replica): heapcap_watch_rules{state}, heapcap_watch_firings_total{outcome};
 * and each sampled target's newest sample as heapcap_target_*{target} gauges,
 * so that a Prometheus scraping /metrics keeps the curves longer than Redis
 * does, and heapcap_target_up{target} (0 while its samples fail) (HEAPCAP_PROMETHEUS_URL reads them back: prometheus-samples.ts).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { WatchSettings } from '@heapcap/config';
import { type HeapcapQueue } from '@heapcap/state';
import { FIRING_OUTCOMES, type FiringOutcome, type WatchSample } from '@heapcap/state/watch';
import { TARGET_GAUGES } from './prometheus-samples.ts';
import { readOncePerScrape } from './scrape-read.ts';

interface WatchMetrics {
  rules: { active: number; paused: number };
  firings: Record<FiringOutcome, number>;
}

const watchMetricsPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; settings: WatchSettings }> = async (app, { queue, settings }) => {
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

  // A sample older than three intervals is stale (the target went away or nobody samples it
  // now): its series ends instead of repeating the last value at every scrape.
  // Every target's newest sample in one pipelined round trip (it was one XRANGE round trip per target).
  const latest = readOncePerScrape<Map<string, WatchSample>>(async () => {
    const now = Date.now();
    const targets = await queue.targets.list();
    // Fresh within three of its intervals: a target sampled only for its curve is sampled every HEAPCAP_SAMPLE_INTERVAL.
    const newest = await queue.watch.newestSamples(
      targets.map(({ target }) => target.id),
      now - 3 * Math.max(settings.intervalMs, settings.sampleIntervalMs),
      1,
    );
    return new Map([...newest].flatMap(([id, samples]) => (samples[0] === undefined ? [] : [[id, samples[0]] as const])));
  });
  // Up or down: 1 for a target with a fresh sample, 0 for one whose last sample failed (the reason is on the
  // console and in `heapcap targets list`); a target nobody samples has no series. One pipelined round trip.
  const downs = readOncePerScrape<Set<string>>(async () => new Set((await queue.watch.downs((await queue.targets.list()).map(({ target }) => target.id))).keys()));
  new Gauge({
    name: 'heapcap_target_up',
    help: 'Whether the watcher could sample the target: 1 (its newest sample is within three intervals), 0 (its last sample failed: connection refused, timed out, not Node, …); no series when nobody samples it',
    labelNames: ['target'],
    registers,
    async collect() {
      const [samples, down] = await Promise.all([latest(), downs()]);
      if (samples === null || down === null) return;
      this.reset();
      for (const target of samples.keys()) if (!down.has(target)) this.set({ target }, 1);
      for (const target of down) this.set({ target }, 0);
    },
  });
  for (const [field, name, help] of TARGET_GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: ['target'],
      registers,
      async collect() {
        const samples = await latest();
        if (samples === null) return;
        this.reset();
        for (const [target, sample] of samples) {
          const value = sample[field];
          if (value !== null) this.set({ target }, value);
        }
      },
    });
  }
};

export default fp(watchMetricsPlugin, { name: 'heapcap-watch-metrics', dependencies: ['heapcap-metrics'] });
