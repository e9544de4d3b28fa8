/**
 * The worker's tests on testkit's world (fresh prefix, file store, targets
 * behind CDP proxies): plus in-process workers, each on its own queue
 * connections like a separate process, all closed in cleanup().
 */
import { pino, type Logger } from 'pino';
import { createTestWorld, type TestWorld, type WorldTarget } from '@heapcap/testkit';
import type { QueueOptions } from '@heapcap/state';
import { CaptureWorker, type CaptureWorkerDeps, type WorkerTuning } from '../../src/index.ts';

/** Short timings so crash recovery takes seconds, not a minute. */
export const FAST_TUNING: Partial<WorkerTuning> = {
  lockDurationMs: 2_000,
  stalledIntervalMs: 1_000,
  targetLeaseMs: 3_000,
  lockRetryMs: 200,
  settleTimeoutMs: 60_000,
  shutdownTimeoutMs: 5_000,
  // A dead worker leaves GET /v1/workers (and its placement fails fast) within ~1.5 s.
  heartbeatIntervalMs: 500,
};

export type TestTarget = WorldTarget;

export interface Harness extends TestWorld {
  log: Logger;
  /** Start an in-process worker on its own queue connections. */
  /** `deps`: what else the worker is given (e.g. `redact`, HEAPCAP_REDACT; `sink`, in place of the world's file store). */
  startWorker(tuning?: Partial<WorkerTuning>, deps?: Partial<Pick<CaptureWorkerDeps, 'redact' | 'sink'>>): Promise<CaptureWorker>;
}

/** A new harness on `redisUrl`. */
export async function createHarness(redisUrl: string, queueOptions: Partial<QueueOptions> = {}, log: Logger = pino({ level: process.env['HEAPCAP_TEST_LOG'] ?? 'silent' })): Promise<Harness> {
  const world = await createTestWorld(redisUrl, { queue: { backoffMs: 200, ...queueOptions } });
  return {
    ...world,
    log,
    async startWorker(tuning = {}, deps = {}) {
      const w = new CaptureWorker({ sink: world.store, ...deps, queue: world.newQueue(), log, tuning: { concurrency: 2, ...FAST_TUNING, ...tuning } });
      world.onCleanup(() => w.close(2_000));
      await w.start();
      return w;
    },
  };
}
