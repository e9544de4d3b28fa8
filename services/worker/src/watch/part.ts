/** The watcher as a service part, in `heapcap serve` and `heapcap worker` (beside the capture worker, with its placements and id). */
import type { ServiceContext } from '@heapcap/service';
import { Watcher } from './watcher.ts';

/** Start the watcher in `ctx` and register its shutdown (leases handed back at once). */
export function startWatchPart(ctx: ServiceContext, id: string): Watcher {
  const watcher = new Watcher({ queue: ctx.queue, log: ctx.log.child({ component: 'watch' }), settings: ctx.config.watch, placements: ctx.config.workerPlacements, id });
  ctx.onClose({ name: 'watcher', close: () => watcher.close(), timeoutMs: 10_000 });
  watcher.start();
  return watcher;
}
