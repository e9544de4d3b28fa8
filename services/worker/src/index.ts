/** @heapcap/worker — the BullMQ capture worker (composition root) and its start-up helpers. */
export { CaptureWorker, workerFromConfig, type CaptureWorkerDeps } from './worker.ts';
export { DEFAULT_TUNING, RETRY_CODES, type WorkerTuning } from './options.ts';
export { createWorkerLogger, safeRedisUrl, WORKER_REDACT_PATHS } from './logger.ts';
export { closeSink, connectQueue, exitAfter, redisHelp, RedisUnreachableError, shutdownSignal, syncTargetsFile } from './bootstrap.ts';
export { settleTarget } from './settle.ts';
