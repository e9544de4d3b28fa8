/** The worker as a service part: started on the shared bootstrap, closed within its drain limit. */
import type { ServiceContext, ServiceDefinition } from '@heapcap/service';
import { startSchedulerPart } from './scheduler/part.ts';
import { workerFromConfig, type CaptureWorker } from './worker.ts';

/** Start a capture worker in `ctx` and register its shutdown (finish or hand back running captures). */
export async function startWorkerPart(ctx: ServiceContext): Promise<CaptureWorker> {
  const worker = workerFromConfig(ctx.config, ctx.queue, ctx.store, ctx.log);
  // Registered before start: a worker that started half-way still closes.
  ctx.onClose({ name: 'worker', close: () => worker.close(), timeoutMs: worker.tuning.shutdownTimeoutMs + 10_000 });
  await worker.start();
  return worker;
}

/** The worker process: the capture worker, and schedules with retention. */
export const workerService: ServiceDefinition<void> = {
  name: 'worker',
  async start(ctx) {
    await startWorkerPart(ctx);
    await startSchedulerPart(ctx);
  },
};
