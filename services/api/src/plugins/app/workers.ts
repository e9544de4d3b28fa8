/**
 * Live workers (their heartbeats in Redis) for GET /v1/workers and the
 * heapcap_workers{placement} gauge; and the orphan sweep: every few seconds the
 * API fails the queued captures of placements that no live worker consumes,
 * so they end with no_worker_for_target even when no worker at all is left.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { Gauge } from 'prom-client';
import type { HeapcapQueue, WorkerInfo } from '@heapcap/state';
import { fromQueue } from './queue-errors.ts';

/** Worker listing for the routes. */
export interface WorkersService {
  /** Live workers, by id. */
  list(): Promise<WorkerInfo[]>;
}

declare module 'fastify' {
  interface FastifyInstance {
    workers: WorkersService;
  }
}

/** How often the API looks for placements without a live worker (a heartbeat TTL is 15 s by default). */
const SWEEP_INTERVAL_MS = 5_000;

const workersPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; sweepIntervalMs?: number | undefined }> = async (app, { queue, sweepIntervalMs }) => {
  app.decorate('workers', { list: () => fromQueue(() => queue.workers.list()) } satisfies WorkersService);
  new Gauge({
    name: 'heapcap_workers',
    help: 'Live workers by placement they consume (`*` = all placements); 0 for a placement that has had jobs but has no worker',
    labelNames: ['placement'],
    registers: [app.metrics.registry],
    async collect() {
      const [live, placements] = await Promise.all([queue.workers.list(), queue.workers.placements()]).catch(() => [null, null] as const);
      if (live === null) return;
      this.reset();
      const counts = new Map<string, number>(placements.map((p) => [p, 0]));
      for (const w of live) for (const p of w.placements) counts.set(p, (counts.get(p) ?? 0) + 1);
      for (const [placement, n] of counts) this.set({ placement }, n);
    },
  });
  const timer = setInterval(() => {
    queue.failOrphanedPlacements().then(
      (failed) => {
        if (failed.length > 0) app.log.warn({ failed }, 'failed captures and leak hunts of placements without a live worker');
      },
      (err: unknown) => app.log.debug({ err }, 'orphan sweep failed; will try again'),
    );
  }, sweepIntervalMs ?? SWEEP_INTERVAL_MS);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
};

export default fp(workersPlugin, { name: 'heapcap-workers', dependencies: ['heapcap-metrics'] });
