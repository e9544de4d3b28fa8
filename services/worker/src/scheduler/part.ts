/** The schedule worker as a service part, beside the capture worker in `heapcap worker` and `heapcap serve`. */
import type { ServiceContext } from '@heapcap/service';
import { ScheduleWorker } from './schedule-worker.ts';

/** Start schedules and retention in `ctx` and register their shutdown. */
export async function startSchedulerPart(ctx: ServiceContext): Promise<ScheduleWorker> {
  const worker = new ScheduleWorker({ queue: ctx.queue, store: ctx.store, log: ctx.log.child({ component: 'schedules' }), settings: ctx.config.schedules });
  // Registered before start: a part that started half-way still closes.
  ctx.onClose({ name: 'schedules', close: () => worker.close(), timeoutMs: worker.tuning.closeTimeoutMs + 5_000 });
  await worker.start();
  return worker;
}
