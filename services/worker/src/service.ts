/** The worker as a service part: started on the shared bootstrap, closed within its drain limit. */
import { tmpdir } from 'node:os';
import { lowerCpuPriority, sweepOrphanPipes } from '@heapcap/capture';
import type { ServiceContext, ServiceDefinition } from '@heapcap/service';
import { startSchedulerPart } from './scheduler/part.ts';
import { startSlackDeliveryPart } from './slack.ts';
import { sweepOrphanScratch } from './temp-files.ts';
import { startWatchPart } from './watch/part.ts';
import { workerFromConfig, type CaptureWorker } from './worker.ts';

/**
 * Start a capture worker in `ctx` and register its shutdown (finish or hand
 * back running captures). The Slack reply delivery starts with it: replies
 * are arranged by whichever API took the command, and must be posted even
 * where the worker has no Slack settings of its own (they then go to the
 * response_url only).
 */
export async function startWorkerPart(ctx: ServiceContext): Promise<CaptureWorker> {
  // A process that captures yields the CPU to paused targets on its host (cpu-priority.ts).
  const priority = lowerCpuPriority(ctx.config.nice);
  if (priority.nice > 0) ctx.log.info({ nice: priority.nice, threads: priority.lowered, failed: priority.failed }, 'capturing at a lower CPU priority than the targets');
  // What a killed worker of this host left in the scratch directory (temp-files.ts).
  const swept = await sweepOrphanScratch(ctx.config.spillDir ?? tmpdir());
  if (swept.length > 0) ctx.log.info({ removed: swept }, 'removed scratch files of workers that are gone');
  // And the FIFO directories of pipe captures a killed worker was reading (pipe-transport.ts).
  const pipes = await sweepOrphanPipes(ctx.config.pipeDir ?? tmpdir());
  if (pipes.length > 0) ctx.log.info({ dir: ctx.config.pipeDir ?? tmpdir(), removed: pipes }, 'removed FIFO directories of pipe captures whose process is gone');
  await startSlackDeliveryPart(ctx);
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
    const worker = await startWorkerPart(ctx);
    await startSchedulerPart(ctx);
    startWatchPart(ctx, worker.id);
  },
};
