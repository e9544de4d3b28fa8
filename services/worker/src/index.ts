/** @heapcap/worker — the BullMQ capture worker and the schedule/retention worker (composition root). */
export { CaptureWorker, workerFromConfig, type CaptureWorkerDeps } from './worker.ts';
export { DEFAULT_TUNING, type WorkerTuning } from './options.ts';
export { startWorkerPart, workerService } from './service.ts';
export { settleTarget } from './settle.ts';
export { targetToEndpoint } from './target-endpoint.ts';
export { ScheduleWorker, DEFAULT_SCHEDULE_TUNING, type ScheduleWorkerDeps, type ScheduleWorkerTuning } from './scheduler/schedule-worker.ts';
export { startSchedulerPart } from './scheduler/part.ts';
export { startSlackDeliveryPart } from './slack.ts';
export { runLeakHunt } from './leak-hunt.ts';
export { Watcher, type WatcherDeps, type WatcherSettings } from './watch/watcher.ts';
export { startWatchPart } from './watch/part.ts';
