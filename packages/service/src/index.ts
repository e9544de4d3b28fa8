/**
 * @heapcap/service — how every heapcap service starts and stops: one logger
 * with one redaction list, Redis with its help message, the targets file kept
 * in the registry, ordered shutdown with a time limit. The API, the worker and
 * `heapcap serve` are built on `runService`.
 */
export { runService, StartupError, SHUTDOWN_GRACE_MS, type RunServiceOptions, type ServiceContext, type ServiceDefinition } from './service.ts';
export { createLogger, componentLogger, safeRedisUrl, REDACT_PATHS } from './logger.ts';
export { connectQueue, redisHelp, RedisUnreachableError } from './redis.ts';
export { keepTargetsSynced, TargetsFileSync, type TargetsFileSetting, type TargetsKeeper } from './targets-sync.ts';
export { exitAfter, runShutdown, shutdownSignal, type CloseStep } from './shutdown.ts';
export { RulesFileSync, type RulesFileStatus, type RulesSyncOutcome } from './rules-sync.ts';
