/**
 * The targets file in the registry, kept there. The registry lives in Redis;
 * a Redis that restarts without persistence (or fails over to an empty
 * replica) comes back empty, and every capture would be `target_not_found`
 * until someone restarted heapcap. So every service re-syncs the file when the
 * registry's sync marker is gone: at once when its Redis connection comes back,
 * and on a timer for data lost without a disconnect (FLUSHALL).
 */
import type { Logger } from 'pino';
import { loadTargetsFile, type HeapcapQueue } from '@heapcap/queue';

/** Load the targets file (a missing file is an empty registry file) into the registry. */
export async function syncTargetsFile(queue: HeapcapQueue, path: string, log: Logger): Promise<void> {
  const targets = await loadTargetsFile(path, { missingOk: true });
  const synced = await queue.targets.syncFromFile(targets);
  log.info({ file: path, ...synced }, targets.length === 0 ? 'no targets file entries; register targets through the API' : 'targets file synced into the registry');
}

/** Keeps the registry synced; `stop()` ends it (idempotent). */
export interface TargetsKeeper {
  /** Check the marker now and re-sync when it is gone; resolves when done (never rejects). */
  check(): Promise<void>;
  stop(): void;
}

/** Re-sync the targets file whenever the registry has lost it; checks every `intervalMs` and on every reconnect. */
export function keepTargetsSynced(queue: HeapcapQueue, path: string, log: Logger, intervalMs = 5_000): TargetsKeeper {
  let running: Promise<void> | undefined;
  let stopped = false;
  const check = (): Promise<void> =>
    (running ??= (async () => {
      try {
        if (stopped || (await queue.targets.isSynced())) return;
        log.warn({ file: path }, 'the target registry is gone (Redis lost its data?): syncing the targets file again');
        await syncTargetsFile(queue, path, log);
      } catch (err) {
        // Redis down or the file unreadable now: the next tick tries again.
        log.debug({ err }, 'targets registry check failed; will retry');
      } finally {
        running = undefined;
      }
    })());
  const onReady = (): void => void check();
  queue.redis.on('ready', onReady);
  const timer = setInterval(onReady, intervalMs);
  timer.unref();
  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
      queue.redis.off('ready', onReady);
    },
  };
}
