/** Start-up and shutdown helpers shared by the worker entry point and `heapcap serve`. */
import type { Logger } from 'pino';
import { createQueue, loadTargetsFile, type HeapcapQueue, type QueueOptions } from '@heapcap/queue';
import { S3Sink, type ArtifactSink } from '@heapcap/storage';
import { safeRedisUrl } from './logger.ts';

/** Redis is not reachable at start-up; the message says how to get one. */
export class RedisUnreachableError extends Error {
  override readonly name = 'RedisUnreachableError';
  readonly code = 'redis_unavailable';
}

/** The operator-facing text for an unreachable Redis. */
export function redisHelp(redisUrl: string): string {
  return [
    `Redis is not reachable at ${safeRedisUrl(redisUrl)}.`,
    'heapcap keeps its queue, capture records and target locks in Redis. Start one:',
    '  apt-get install redis-server && redis-server --daemonize yes',
    '  or: docker compose up -d redis',
    'or point HEAPCAP_REDIS_URL at an existing Redis (redis://HOST:PORT or rediss://…).',
  ].join('\n');
}

/** Open the queue and check Redis answers within `timeoutMs`; throws RedisUnreachableError otherwise. */
export async function connectQueue(options: QueueOptions, timeoutMs = 3_000): Promise<HeapcapQueue> {
  const queue = createQueue(options);
  try {
    await queue.ping(timeoutMs);
    return queue;
  } catch (err) {
    await queue.close();
    throw new RedisUnreachableError(redisHelp(options.redisUrl), { cause: err });
  }
}

/** Load the targets file (a missing file is an empty registry file) into the registry. */
export async function syncTargetsFile(queue: HeapcapQueue, path: string, log: Logger): Promise<void> {
  const targets = await loadTargetsFile(path, { missingOk: true });
  const synced = await queue.targets.syncFromFile(targets);
  log.info({ file: path, ...synced }, targets.length === 0 ? 'no targets file entries; register targets through the API' : 'targets file synced into the registry');
}

/** Release what the sink holds (the S3 client's sockets and janitor timers). */
export function closeSink(sink: ArtifactSink): void {
  if (sink instanceof S3Sink) sink.close();
}

/**
 * Resolve on the first SIGTERM or SIGINT; later signals are ignored (shutdown is
 * already under way and has its own deadline). A second Ctrl-C from a terminal
 * often arrives twice through `heapcap serve`'s parent, so it must not kill us.
 */
export function shutdownSignal(log: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let seen = false;
    const on = (signal: NodeJS.Signals): void => {
      if (seen) {
        log.warn({ signal }, 'already shutting down');
        return;
      }
      seen = true;
      log.info({ signal }, 'shutting down');
      resolve(signal);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/** Exit after `ms` no matter what is still open (the shutdown time limit's backstop). */
export function exitAfter(ms: number, code = 1): void {
  setTimeout(() => process.exit(code), ms).unref();
}
